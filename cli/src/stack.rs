//! The local stack: every function's routes over one set of stores, plus the in-process
//! schedules and the queue worker that Lambda's SQS trigger is on AWS.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use agentrl_core::dataset::Rules;
use agentrl_core::privacy::Pseudonymizer;
use agentrl_dataset::{DatasetRequests, Datasets};
use agentrl_diff::{Limits, Scorer};
use agentrl_http::sqs::{Consumer, DrainOptions, drain};
use agentrl_ingest::TrajectoryState;
use agentrl_queue_worker::QueueWorker;

use agentrl_attribution::AttributionState;
use agentrl_budget::BudgetState;
use agentrl_diff_score::DiffState;
use agentrl_http::{AppOptions, Auth, Metrics, app};
use agentrl_learning::LearningState;
use agentrl_rewards::{Evaluator, Provider, RewardState};
use agentrl_store::{Stores, ports::Queue};
use agentrl_training::{
    Launcher, LocalLauncher, LocalRunner, TrainingConsumer, TrainingState, launch::Storage,
};
use anyhow::Context;
use tokio::{net::TcpListener, sync::watch};

/// How often expired items are swept from the embedded store, and idle gateway sessions ended.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// How often traced conversations are looked at: their quiet period is seconds, and an idle
/// open list costs one small query per shard.
const TRACE_SWEEP_EVERY: Duration = Duration::from_secs(5);
/// How often the policy update loop visits the pending agents (the template's schedule).
const POLICY_EVERY: Duration = Duration::from_secs(15 * 60);

/// Models the built-in model server holds loaded at once.
const MODELS_HELD: usize = 2;

/// The address this process reaches its own listener at: a wildcard bind is reached on
/// loopback.
fn loopback(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, addr.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    }
}

/// How the stack runs training jobs.
pub enum Launch {
    /// As child processes, one at a time: `program ARGS… run …` (the `agentrl train` command
    /// line) on the objects of `storage`, logging to `logs/RUN.log`.
    Local {
        /// The trainer's program and the arguments before `run`.
        command: (PathBuf, Vec<String>),
        /// Where the jobs' objects are.
        storage: Storage,
        /// Where the jobs' logs go.
        logs: PathBuf,
    },
    /// Through another launcher (AWS Batch).
    Remote(Arc<dyn Launcher>),
}

impl Launch {
    /// `agentrl train` of this very binary, on the objects of `storage`, logging under `logs`.
    ///
    /// # Errors
    /// When the running executable cannot be found.
    pub fn this_binary(storage: Storage, logs: PathBuf) -> anyhow::Result<Self> {
        let program = std::env::current_exe().context("finding the agentrl executable")?;
        Ok(Self::Local {
            command: (program, vec!["train".to_owned()]),
            storage,
            logs,
        })
    }

    /// [`Launch::this_binary`] over the embedded store of `data_dir`.
    ///
    /// # Errors
    /// When the running executable cannot be found.
    pub fn embedded(data_dir: &std::path::Path) -> anyhow::Result<Self> {
        Self::this_binary(
            Storage::Dir(data_dir.join("objects")),
            data_dir.join("training-logs"),
        )
    }
}

/// Drain options taking `max_messages` a batch.
fn batches_of(max_messages: usize) -> DrainOptions {
    DrainOptions {
        max_messages,
        ..DrainOptions::default()
    }
}

/// Trace ingest over the stores: finished conversations go to the ingest queue.
fn traces(stores: &Stores) -> agentrl_traces::TracesState {
    agentrl_traces::TracesState::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
    )
}

/// The composed application of every function and the built-in model server (the console is
/// merged beside it by [`start`]).
pub fn application(
    stores: &Stores,
    auth: Auth,
    metrics: Metrics,
    training: TrainingState,
    provider: Arc<Provider>,
    gateway: agentrl_gateway::GatewayState,
    models: crate::model_server::ModelServer,
) -> axum::Router {
    let services = vec![
        agentrl_budget::service(BudgetState::new(stores.table.clone())),
        agentrl_attribution::service(AttributionState::new(stores.table.clone())),
        agentrl_diff_score::service(DiffState::new(stores.table.clone())),
        agentrl_ingest::service(TrajectoryState::new(
            stores.queue.clone(),
            stores.objects.clone(),
            stores.table.clone(),
        )),
        agentrl_rewards::service(RewardState::new(
            stores.table.clone(),
            stores.objects.clone(),
            stores.evaluations.clone(),
            provider,
        )),
        agentrl_learning::service(LearningState::new(
            stores.table.clone(),
            stores.queue.clone(),
            agentrl_learning::Outlets::of(stores),
        )),
        agentrl_training::service(training),
        agentrl_gateway::service(gateway),
        agentrl_traces::service(traces(stores)),
        crate::model_server::service(models),
    ];
    app(
        services,
        AppOptions {
            auth,
            metrics,
            // The largest limit of any function: a verification's JUnit report. Every route
            // layers its own limit, so the larger envelope costs the others nothing.
            body_limit: agentrl_rewards::MAX_BODY_BYTES,
            idempotency: Some(stores.table.clone()),
        },
    )
}

/// A running stack: its address and the handle that stops it.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Stops accepting, lets in-flight requests finish, stops the schedules.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.context("the server task panicked")?
    }
}

/// Drains `queue` with `consumer` as `options` say, until `stopped`: the local
/// counterpart of an SQS trigger. The current batch always finishes: a stop is only seen
/// between batches.
fn consume<C: Consumer + 'static>(
    consumer: C,
    queue: Arc<dyn Queue>,
    options: DrainOptions,
    stopped: watch::Receiver<bool>,
    what: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !*stopped.borrow() {
            if let Err(e) = drain(&consumer, queue.as_ref(), options).await {
                tracing::warn!(error = %e, queue = what, "a consumer could not read its queue");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    })
}

/// Binds `addr` and serves `stores` until [`Running::stop`]; the ingest worker drains the work
/// queue meanwhile, pseudonymising with `pseudonyms`, the training consumer drains the
/// training queue, the dataset job the dataset queue, the evaluation worker the evaluation
/// queue (judges call the provider of `AGENTRL_JUDGE_*`), and training jobs run as `launch`
/// says.
pub async fn start(
    addr: SocketAddr,
    stores: Stores,
    auth: Auth,
    metrics: Metrics,
    pseudonyms: Arc<Pseudonymizer>,
    launch: Launch,
) -> anyhow::Result<Running> {
    // This process is the queues' only consumer: what a crash left in flight goes again now.
    let redelivered = stores
        .redeliver_in_flight()
        .await
        .context("redelivering in-flight messages")?;
    if redelivered > 0 {
        tracing::info!(
            redelivered,
            "messages left in flight by the last run are redelivered"
        );
    }
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let addr = listener.local_addr()?;
    let (launcher, local): (Arc<dyn Launcher>, _) = match launch {
        Launch::Local {
            command,
            storage,
            logs,
        } => {
            let (launcher, jobs) = LocalLauncher::new(logs);
            (Arc::new(launcher), Some((jobs, command, storage)))
        }
        Launch::Remote(launcher) => (launcher, None),
    };
    let training = TrainingState::new(
        stores.table.clone(),
        stores.objects.clone(),
        launcher,
        pseudonyms.clone(),
    );
    let provider = Arc::new(Provider::from_env());
    // How the console signs in: the API key, or the OIDC provider of AGENTRL_CONSOLE_OIDC_*.
    let console = agentrl_console::ConsoleConfig::from_env()?;
    // Beside the static keys, the tenant API keys `agentrl keys` created in this store.
    let auth = auth
        .with_stored(agentrl_http::api_keys::ApiKeys::new(stores.table.clone()))
        .with_sessions(agentrl_http::sessions::Sessions::new(stores.table.clone()));
    // The built-in model server serves the trainer's models at /models/v1; it is the
    // gateway's upstream unless the deployment names another (AGENTRL_GATEWAY_BASE_URL).
    let staging = tempfile::Builder::new()
        .prefix("agentrl-models-")
        .tempdir()
        .context("creating the model server's staging directory")?;
    let models = crate::model_server::ModelServer::new(
        agentrl_training::TrainingRepo::new(stores.table.clone()),
        stores.objects.clone(),
        staging.path().to_owned(),
        MODELS_HELD,
    );
    let upstream = match std::env::var("AGENTRL_GATEWAY_BASE_URL") {
        Ok(url) if !url.is_empty() => agentrl_gateway::Upstream::from_env(),
        _ => agentrl_gateway::Upstream::own_models(format!(
            "http://{}{}",
            loopback(addr),
            crate::model_server::BASE_PATH
        )),
    };
    // Starts the gateway's call recorder on this runtime; the sweeper ends its idle sessions,
    // and promotions have it serve versions before they are routed.
    let mut gateway = agentrl_gateway::GatewayState::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        upstream,
    );
    if let Some(dir) = std::env::var_os("AGENTRL_LORA_SYNC_DIR").filter(|d| !d.is_empty()) {
        gateway = gateway.with_adapter_sync(dir.into());
    }
    let training =
        training.with_model_server(Arc::new(crate::models::GatewayServer(gateway.clone())));
    let router = application(
        &stores,
        auth,
        metrics,
        training.clone(),
        provider.clone(),
        gateway.clone(),
        models,
    )
    .merge(agentrl_console::router(console));
    let (stop, mut stopped) = watch::channel(false);
    let runner = local.map(|(jobs, command, storage)| {
        let runner = LocalRunner::new(jobs, command, storage, training.clone());
        tokio::spawn(runner.run(stop.subscribe()))
    });
    let consumer = TrainingConsumer::new(training, stores.training.clone());
    let ready = consume(
        consumer,
        stores.training.clone(),
        batches_of(10),
        stop.subscribe(),
        "training",
    );
    let requests = DatasetRequests::new(
        Datasets::new(
            stores.objects.clone(),
            stores.events.clone(),
            stores.training.clone(),
            Rules::default(),
        ),
        stores.datasets.clone(),
        pseudonyms.clone(),
    );
    let requested = consume(
        requests,
        stores.datasets.clone(),
        batches_of(10),
        stop.subscribe(),
        "dataset",
    );
    let mut sweep_stopped = stop.subscribe();
    let worker = QueueWorker::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(&stores),
        pseudonyms,
        provider.clone(),
    );
    let worker = consume(
        worker,
        stores.queue.clone(),
        DrainOptions::default(),
        stop.subscribe(),
        "ingest",
    );
    let evaluator = Evaluator::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.evaluations.clone(),
        provider,
        Arc::new(Scorer::new(Limits::default())),
    );
    let evaluations = consume(
        evaluator,
        stores.evaluations.clone(),
        DrainOptions {
            max_messages: 10,
            visibility: agentrl_rewards::VISIBILITY_TIMEOUT,
            ..DrainOptions::default()
        },
        stop.subscribe(),
        "evaluations",
    );
    let policy =
        agentrl_learning::policy(stores.table.clone(), agentrl_learning::Outlets::of(&stores));
    let conversations = traces(&stores);
    let sweeper = tokio::spawn(async move {
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        let mut quiet = tokio::time::interval(TRACE_SWEEP_EVERY);
        // The first run comes one period after start, as with the deployed schedule.
        let mut update =
            tokio::time::interval_at(tokio::time::Instant::now() + POLICY_EVERY, POLICY_EVERY);
        loop {
            tokio::select! {
                _ = sweep.tick() => {
                    if let Err(e) = stores.sweep_expired().await {
                        tracing::warn!(error = %format!("{e:#}"), "expiry sweep failed");
                    }
                    match gateway.end_idle_sessions(agentrl_store::clock::now_ms()).await {
                        Ok(run) if run.ended + run.closed_empty + run.failed > 0 => tracing::info!(?run, "idle gateway sessions swept"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "the idle-session sweep could not read the open list"),
                    }
                }
                _ = quiet.tick() => match conversations.sweep(agentrl_store::clock::now_ms()).await {
                    Ok(run) if run.ingested + run.joined + run.failed > 0 => tracing::info!(?run, "traced conversations swept"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "the trace sweep could not read the open list"),
                },
                _ = update.tick() => match policy.run_pending().await {
                    Ok(run) => tracing::info!(visited = run.visited, updated = run.updated, failed = run.failed, "policy update loop ran"),
                    Err(e) => tracing::warn!(error = %e, "the policy update loop could not read the pending list"),
                },
                _ = sweep_stopped.changed() => break,
            }
        }
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.changed().await;
            })
            .await
            .context("serving")?;
        sweeper.await.context("the sweeper panicked")?;
        worker.await.context("the ingest worker panicked")?;
        ready.await.context("the training consumer panicked")?;
        requested.await.context("the dataset consumer panicked")?;
        evaluations
            .await
            .context("the evaluation worker panicked")?;
        if let Some(runner) = runner {
            runner.await.context("the training runner panicked")?;
        }
        drop(staging);
        Ok(())
    });
    Ok(Running { addr, stop, task })
}
