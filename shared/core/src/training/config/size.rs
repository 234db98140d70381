//! Sizes as transformers writes them.

use serde::{Deserialize, Serialize};

/// A size in bytes, written as a number or as transformers writes sizes (`"5GB"`, `"500MB"`,
/// `"2GiB"`); serialised as the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// transformers' `convert_file_size_to_int`: decimal `KB`/`MB`/`GB`, binary
    /// `KiB`/`MiB`/`GiB`, a lowercase final `b` meaning bits.
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let t = text.trim();
        let units: [(&str, u64); 6] = [
            ("GIB", 1 << 30),
            ("MIB", 1 << 20),
            ("KIB", 1 << 10),
            ("GB", 1_000_000_000),
            ("MB", 1_000_000),
            ("KB", 1_000),
        ];
        let upper = t.to_uppercase();
        for (unit, scale) in units {
            if let Some(number) = upper.strip_suffix(unit) {
                let n: u64 = number
                    .trim()
                    .parse()
                    .map_err(|_| format!("{text:?}: not a whole number of {unit}"))?;
                let bytes = n * scale;
                return Ok(Self(if t.ends_with('b') { bytes / 8 } else { bytes }));
            }
        }
        t.parse().map(Self).map_err(|_| {
            format!("{text:?}: a size is bytes, or a number and KB, MB, GB, KiB, MiB, GiB")
        })
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(Self(n)),
            Raw::Text(t) => Self::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}
