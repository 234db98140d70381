//! Which stores an operator command works on: the embedded store of `agentrl serve
//! --data-dir`, or the deployed ones (`--aws`).

use std::path::PathBuf;

use agentrl_store::Stores;

/// `--data-dir DIR` or `--aws`.
#[derive(clap::Args)]
pub struct StoreArgs {
    /// The data directory of `agentrl serve --data-dir` (the embedded store).
    #[arg(long, default_value = "./agentrl-data", conflicts_with = "aws")]
    data_dir: PathBuf,
    /// The deployed stores instead (DynamoDB and S3, named by the environment the template
    /// gives the functions: `AGENTRL_TABLE`, `AGENTRL_BUCKET`, …).
    #[arg(long)]
    aws: bool,
}

impl StoreArgs {
    /// The stores named.
    ///
    /// # Errors
    /// A data directory that is not one (opening would create an empty store, and a mistyped
    /// directory must not look like "nothing there"), or missing AWS settings.
    pub fn open(&self) -> anyhow::Result<Stores> {
        if self.aws {
            return Stores::aws_from_env();
        }
        anyhow::ensure!(
            self.data_dir.join("agentrl.db").is_file(),
            "{} is not an agentrl data directory (no agentrl.db): pass the --data-dir of \
             `agentrl serve`",
            self.data_dir.display()
        );
        Stores::embedded(&self.data_dir)
    }

    /// The pseudonymiser naming tenant partitions in these stores: the data directory's
    /// secret, or `AGENTRL_PSEUDONYM_SECRET` with `--aws`.
    ///
    /// # Errors
    /// A missing or unreadable secret.
    pub fn pseudonyms(
        &self,
    ) -> anyhow::Result<std::sync::Arc<agentrl_core::privacy::Pseudonymizer>> {
        if self.aws {
            agentrl_http::lambda::pseudonyms_from_env()
        } else {
            crate::secret::local_pseudonyms(&self.data_dir)
        }
    }
}
