//! Soak of the local stack (issue #16): steady mixed load over the route families of the API,
//! with valid requests, for minutes, against the release `agentrl serve` binary in its own
//! process on loopback. Every 10 s it samples the server's resident memory, open file
//! descriptors and threads, and the request rate. At the end: latency per route family, the
//! series, and whether memory and descriptors stayed flat after the warm-up. It exits non-zero
//! on any answer other than the expected status, on growth, on a panic in the server's log, or
//! when the server does not stop cleanly on SIGTERM. Training runs are real: the server starts
//! an `agentrl train run` process for each, on a tiny model the bench writes.
//!
//! `cargo bench -p agentrl --bench soak [-- --minutes M --clients N]` (defaults: 10 and 8)

mod support;

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use agentrl_store::clock::now_ms_i64;
use serde_json::{Value, json};
use support::{KEY, arg};

const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The warm-up is the first 2 minutes, or the first fifth of a shorter run.
const WARM_UP_MAX_S: u64 = 120;
/// RSS may grow by this share of its level at the end of the warm-up, plus [`RSS_SLACK_MB`].
const RSS_SHARE: f64 = 0.10;
const RSS_SLACK_MB: f64 = 20.0;
/// Descriptors may end this many above their level at the end of the warm-up.
const FD_SLACK: u64 = 4;
/// Events, trajectories and executions are spread over this many registered agents, and
/// events over this many users, so per-agent state stays bounded as it would in production.
const AGENTS: u64 = 16;
const USERS: u64 = 40;
/// Past this many failures the run stops early: the failures are the finding.
const MAX_FAILURES: u64 = 1_000;
const KEPT_FAILURES: usize = 5;
/// One in this many steps of a client also fetches `/openapi.json` (about 210 KB).
const OPENAPI_EVERY: u64 = 100;
const CONFIGS: [&str; 7] = [
    "budgets",
    "diffs",
    "judges",
    "learning",
    "promotion-gate",
    "rewards",
    "trajectories",
];

#[derive(Clone, Copy)]
enum Family {
    Health,
    Openapi,
    Budgets,
    Diffs,
    Executions,
    Evaluations,
    Attributions,
    Sessions,
    Trajectories,
    Events,
    Agents,
    Learning,
    Stats,
    Lists,
    Config,
    Gates,
    Training,
}

/// Table names, in the order of [`Family`].
const FAMILIES: [&str; 17] = [
    "`GET /health`",
    "`GET /openapi.json`",
    "budgets: create, 2 reports, read, complete",
    "`POST /v1/diffs/score`",
    "executions: create, 3 verifications, reward, read",
    "evaluations: create, poll until completed",
    "attributions: create, read; contributions",
    "attribution sessions: create, values, read",
    "`POST /v1/trajectories`",
    "`POST /v1/events` (4 events)",
    "agents: create, patch, reads, route, versions",
    "agent learning: update, settings, unfreeze",
    "KPIs, stats, ranking, judge usage, privacy",
    "lists: 2 pages each, NDJSON exports",
    "config: read, write back",
    "`POST /v1/gates/{stage}/check`",
    "training: outcomes; runs: create, read, then cancel or wait and promote",
];

/// What each client step does, in turn; client `k` starts at step `k`.
#[derive(Clone, Copy)]
enum Step {
    Health,
    Budget,
    Diff,
    Execution,
    Evaluation,
    Attribution,
    Session,
    Trajectory,
    Events,
    AgentReads,
    AgentWrites,
    Learning,
    Stats,
    Lists,
    Config,
    Gate,
    Outcomes,
    TrainingRun,
}

const SCHEDULE: [Step; 24] = [
    Step::Budget,
    Step::Events,
    Step::Trajectory,
    Step::Health,
    Step::Diff,
    Step::Execution,
    Step::AgentReads,
    Step::Budget,
    Step::Events,
    Step::Trajectory,
    Step::Attribution,
    Step::Stats,
    Step::Session,
    Step::Lists,
    Step::Learning,
    Step::Config,
    Step::Diff,
    Step::Evaluation,
    Step::AgentWrites,
    Step::Gate,
    Step::Events,
    Step::Trajectory,
    Step::Outcomes,
    Step::TrainingRun,
];

/// One answered request: when (ms since the load started), which family, how long (µs).
struct Sample {
    at_ms: u32,
    family: u8,
    us: u32,
}

#[derive(Default)]
struct Failures {
    by_route: BTreeMap<&'static str, u64>,
    by_family: [u64; FAMILIES.len()],
    first: Vec<String>,
}

struct Shared {
    started: Instant,
    requests: AtomicU64,
    failed: AtomicU64,
    stop: AtomicBool,
    failures: Mutex<Failures>,
    /// The dataset the training runs train on.
    dataset: String,
    /// Whether a client has a training run in flight.
    training: AtomicBool,
    /// Training runs cancelled (or found finished by the cancel), and promoted or refused by
    /// the gate after they succeeded.
    runs: [AtomicU64; 3],
}

impl Shared {
    fn new(dataset: String) -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            requests: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            failures: Mutex::new(Failures::default()),
            dataset,
            training: AtomicBool::new(false),
            runs: Default::default(),
        })
    }

    fn fail(&self, family: Family, route: &'static str, what: String) {
        let mut f = self.failures.lock().unwrap();
        *f.by_route.entry(route).or_default() += 1;
        f.by_family[family as usize] += 1;
        if f.first.len() < KEPT_FAILURES {
            f.first.push(format!("{route}: {what}"));
        }
        if self.failed.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_FAILURES {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

struct Answer {
    status: u16,
    body: Value,
    next_cursor: Option<String>,
}

struct Client {
    http: reqwest::Client,
    base: String,
    shared: Arc<Shared>,
    samples: Vec<Sample>,
}

impl Client {
    fn new(base: &str, shared: Arc<Shared>) -> Self {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Self {
            http,
            base: base.to_owned(),
            shared,
            samples: Vec::new(),
        }
    }

    /// `method` on `path`, with the tenant's key.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(KEY)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::GET, path)
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, path).json(body)
    }

    fn put(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::PUT, path).json(body)
    }

    fn patch(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::PATCH, path).json(body)
    }

    /// `route` ("METHOD /path", the path as it is sent) with `body` as JSON; an answer other
    /// than `expected` is a failure of `route`.
    async fn send(
        &mut self,
        family: Family,
        route: &'static str,
        expected: u16,
        body: &Value,
    ) -> Option<Answer> {
        let (method, path) = route.split_once(' ').expect("a route is METHOD /path");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        let request = self.request(method, path).json(body);
        self.call(family, route, expected, request).await
    }

    /// Sends `request`; an answer other than `expected` is a failure of `route`.
    async fn call(
        &mut self,
        family: Family,
        route: &'static str,
        expected: u16,
        request: reqwest::RequestBuilder,
    ) -> Option<Answer> {
        self.call_any(family, route, &[expected], request).await
    }

    /// Sends `request`; an answer with a status not in `expected` is a failure of `route`.
    async fn call_any(
        &mut self,
        family: Family,
        route: &'static str,
        expected: &[u16],
        request: reqwest::RequestBuilder,
    ) -> Option<Answer> {
        let started = Instant::now();
        let answer = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let next_cursor = response
                .headers()
                .get("x-next-cursor")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, next_cursor, text))
        }
        .await;
        let us = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        match answer {
            Ok((status, next_cursor, text)) if expected.contains(&status) => {
                let at_ms = u32::try_from(self.shared.started.elapsed().as_millis()).unwrap();
                self.samples.push(Sample {
                    at_ms,
                    family: family as u8,
                    us,
                });
                let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
                Some(Answer {
                    status,
                    body,
                    next_cursor,
                })
            }
            Ok((status, _, text)) => {
                let text: String = text.chars().take(400).collect();
                self.shared.fail(family, route, format!("{status} {text}"));
                None
            }
            Err(e) => {
                self.shared.fail(family, route, format!("no answer: {e}"));
                None
            }
        }
    }

    /// `field` of an answer as a string; its absence is a failure of `route`.
    fn text(
        &self,
        family: Family,
        route: &'static str,
        answer: &Answer,
        field: &str,
    ) -> Option<String> {
        let value = answer.body[field].as_str().map(str::to_owned);
        if value.is_none() {
            self.shared
                .fail(family, route, format!("no `{field}` in {}", answer.body));
        }
        value
    }
}

fn agent(n: u64) -> String {
    format!("agent-{}", n % AGENTS)
}

fn user(n: u64) -> String {
    format!("user-{}", n % USERS)
}

async fn run(step: Step, c: &mut Client, n: u64) -> Option<()> {
    match step {
        Step::Health => health(c).await,
        Step::Budget => budget(c, n).await,
        Step::Diff => diff(c, n).await,
        Step::Execution => execution(c, n).await,
        Step::Evaluation => evaluation(c, n).await,
        Step::Attribution => attribution(c, n).await,
        Step::Session => session(c, n).await,
        Step::Trajectory => trajectory(c, n).await,
        Step::Events => events(c, n).await,
        Step::AgentReads => agent_reads(c, n).await,
        Step::AgentWrites => agent_writes(c, n).await,
        Step::Learning => learning(c, n).await,
        Step::Stats => stats(c).await,
        Step::Lists => lists(c).await,
        Step::Config => config(c, n).await,
        Step::Gate => gate(c, n).await,
        Step::Outcomes => outcomes(c, n).await,
        Step::TrainingRun => training_run(c, n).await,
    }
}

async fn health(c: &mut Client) -> Option<()> {
    for _ in 0..3 {
        let url = format!("{}/health", c.base);
        c.call(Family::Health, "GET /health", 200, c.http.get(url))
            .await?;
    }
    Some(())
}

async fn openapi(c: &mut Client) -> Option<()> {
    let url = format!("{}/openapi.json", c.base);
    let document = c
        .call(Family::Openapi, "GET /openapi.json", 200, c.http.get(url))
        .await?;
    if document.body["paths"]
        .as_object()
        .is_none_or(|p| p.len() < 50)
    {
        let what = "a document without its paths".to_owned();
        c.shared.fail(Family::Openapi, "GET /openapi.json", what);
    }
    Some(())
}

async fn budget(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Budgets;
    let body = json!({"task_id": format!("soak-{n}"), "task": {
        "description": "Fix the off-by-one error in the pagination helper",
        "files_touched": ["src/pager.rs"]}});
    let request = c
        .post("/v1/budgets", &body)
        .header("Idempotency-Key", format!("soak-budget-{n}"));
    let created = c.call(f, "POST /v1/budgets", 201, request).await?;
    let id = c.text(f, "POST /v1/budgets", &created, "budget_id")?;
    let reports = format!("/v1/budgets/{id}/consumption");
    for (report, tokens, confidence) in [("r1", 300, 0.9), ("r2", 150, 0.4)] {
        let body = json!({"report_id": report, "tokens": tokens, "confidence": confidence});
        let route = "POST /v1/budgets/{id}/consumption";
        c.call(f, route, 200, c.post(&reports, &body)).await?;
    }
    let path = format!("/v1/budgets/{id}");
    c.call(f, "GET /v1/budgets/{id}", 200, c.get(&path)).await?;
    let outcome = if n.is_multiple_of(3) {
        "failure"
    } else {
        "success"
    };
    let body = json!({"outcome": outcome});
    let path = format!("/v1/budgets/{id}/complete");
    c.call(
        f,
        "POST /v1/budgets/{id}/complete",
        200,
        c.post(&path, &body),
    )
    .await?;
    Some(())
}

const TEST: &str =
    "from pager import last_page\n\n\ndef test_last_page():\n    assert last_page(10, 3) == 4\n";

async fn diff(c: &mut Client, n: u64) -> Option<()> {
    let before = format!(
        "PAGE_LIMIT = {}\n\n\ndef last_page(total, size):\n    if size <= 0:\n        raise ValueError(\"size must be positive\")\n    return total // size\n",
        n % 50
    );
    let after = before.replace("return total // size", "return (total + size - 1) // size");
    // One change in five deletes the assertion instead: the flagged path is scored too.
    let test_after = if n.is_multiple_of(5) {
        TEST.replace("assert last_page(10, 3) == 4", "last_page(10, 3)")
    } else {
        TEST.to_owned()
    };
    let body = json!({
        "before": {"files": {"pager.py": before, "test_pager.py": TEST}},
        "after": {"files": {"pager.py": after, "test_pager.py": test_after}},
        "tests_passed": true});
    c.send(Family::Diffs, "POST /v1/diffs/score", 200, &body)
        .await?;
    Some(())
}

async fn new_execution(c: &mut Client, n: u64) -> Option<String> {
    let f = Family::Executions;
    let body = json!({"agent_id": agent(n), "input": "What is 6 * 7?",
        "output": "The answer is 42.", "tokens_used": 812, "latency_ms": 1840});
    let created = c.send(f, "POST /v1/executions", 201, &body).await?;
    c.text(f, "POST /v1/executions", &created, "execution_id")
}

async fn execution(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Executions;
    let id = new_execution(c, n).await?;
    let path = format!("/v1/executions/{id}/verifications");
    for body in [
        json!({"method": "answer_match", "mode": "regex", "pattern": ".*\\b42\\b.*"}),
        json!({"method": "test_execution", "tests_passed": 11, "tests_total": 12}),
        json!({"method": "judge", "score": 8.0, "scale_max": 10.0, "confidence": 0.8}),
    ] {
        let route = "POST /v1/executions/{id}/verifications";
        c.call(f, route, 201, c.post(&path, &body)).await?;
    }
    let path = format!("/v1/executions/{id}/reward");
    c.call(f, "GET /v1/executions/{id}/reward", 200, c.get(&path))
        .await?;
    let path = format!("/v1/executions/{id}");
    c.call(f, "GET /v1/executions/{id}", 200, c.get(&path))
        .await?;
    Some(())
}

/// No judge provider is configured, so the judges abstain: the evaluation is the diff, the
/// tests and the checks, through the queue and the in-process evaluation worker.
async fn evaluation(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Evaluations;
    let execution = new_execution(c, n).await?;
    let before = "def last_page(total, size):\n    return total // size\n";
    let after = "def last_page(total, size):\n    return (total + size - 1) // size\n";
    let body = json!({"execution_id": execution, "task_type": "code",
        "change": {"before": {"files": {"pager.py": before, "test_pager.py": TEST}},
                   "after": {"files": {"pager.py": after, "test_pager.py": TEST}}},
        "tests": {"tests_passed": 1, "tests_total": 1},
        "checks": {"compiles": true}});
    let accepted = c.send(f, "POST /v1/evaluations", 202, &body).await?;
    let id = c.text(f, "POST /v1/evaluations", &accepted, "evaluation_id")?;
    let path = format!("/v1/evaluations/{id}");
    let route = "GET /v1/evaluations/{id}";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let evaluation = c.call(f, route, 200, c.get(&path)).await?;
        let status = evaluation.body["status"].as_str().unwrap_or_default();
        if status == "completed" {
            return Some(());
        }
        if status == "failed" || Instant::now() > deadline {
            let what = format!("evaluation not completed: {}", evaluation.body);
            c.shared.fail(f, route, what);
            return None;
        }
    }
}

const TEAM: [&str; 3] = ["planner", "coder", "tester"];

async fn attribution(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Attributions;
    let task = format!("soak-{n}");
    let v = (n % 5) as f64 / 4.0;
    let coalition = |members: &[&str], value: f64| json!({"members": members, "value": value});
    let body = json!({"task_id": task, "agents": TEAM, "total_reward": 10.0, "coalitions": [
        coalition(&["planner"], 1.0), coalition(&["coder"], 2.0), coalition(&["tester"], 0.5),
        coalition(&["planner", "coder"], 3.0 + v), coalition(&["planner", "tester"], 1.5),
        coalition(&["coder", "tester"], 3.0), coalition(&TEAM, 4.0 + v)]});
    c.send(f, "POST /v1/attributions", 201, &body).await?;
    let path = format!("/v1/attributions/{task}");
    c.call(f, "GET /v1/attributions/{task_id}", 200, c.get(&path))
        .await?;
    let body = json!({"agent_id": agent(n), "task_id": task, "quality_before": 0.4,
        "quality_after": 0.4 + v / 2.0, "effort_ratio": 1.0});
    c.send(f, "POST /v1/contributions", 201, &body).await?;
    Some(())
}

async fn session(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Sessions;
    let body = json!({"task_id": format!("soak-session-{n}"), "agents": TEAM,
        "total_reward": 1.0, "max_permutations": 12, "seed": n % 1_000});
    let route = "POST /v1/attributions/sessions";
    let mut state = c.send(f, route, 201, &body).await?;
    let id = c.text(f, route, &state, "session_id")?;
    let path = format!("/v1/attributions/sessions/{id}/values");
    let route = "POST /v1/attributions/sessions/{id}/values";
    // An additive game: a coalition is worth the sum of its members' positions.
    let worth = |members: &Value| -> f64 {
        members.as_array().map_or(0.0, |m| {
            m.iter()
                .filter_map(|a| TEAM.iter().position(|t| Some(*t) == a.as_str()))
                .map(|i| i as f64 + 1.0)
                .sum()
        })
    };
    for _ in 0..10 {
        let Some(proposals) = state.body["proposals"].as_array().filter(|p| !p.is_empty()) else {
            break;
        };
        let values: Vec<Value> = proposals
            .iter()
            .map(|p| json!({"members": p["coalition"], "value": worth(&p["coalition"])}))
            .collect();
        let body = json!({"values": values});
        state = c.call(f, route, 200, c.post(&path, &body)).await?;
    }
    if state.body["progress"]["done"] != true {
        c.shared
            .fail(f, route, format!("session not done: {}", state.body));
        return None;
    }
    let path = format!("/v1/attributions/sessions/{id}");
    c.call(f, "GET /v1/attributions/sessions/{id}", 200, c.get(&path))
        .await?;
    Some(())
}

async fn trajectory(c: &mut Client, n: u64) -> Option<()> {
    let mut assistant =
        json!({"role": "assistant", "content": "ran the tests and fixed the off-by-one"});
    if n.is_multiple_of(2) {
        assistant["tool_call"] = json!({"name": "run_tests", "arguments": {"path": "tests/"}});
    }
    let body = json!({"trajectory_id": format!("soak-{n}"), "agent_id": agent(n),
        "conversation_id": format!("conversation-{n}"),
        "turns": [{"role": "user", "content": format!("fix bug {} in the pager", n % 97)}, assistant],
        "final_outcome": {"success": !n.is_multiple_of(4), "reward": if n.is_multiple_of(4) { 0.0 } else { 0.9 }}});
    c.send(Family::Trajectories, "POST /v1/trajectories", 202, &body)
        .await?;
    Some(())
}

/// A reply, its feedback, an action and a session end, as one batch.
async fn events(c: &mut Client, n: u64) -> Option<()> {
    let (a, u, m, at) = (agent(n), user(n), format!("message-{n}"), now_ms_i64());
    let value = [0.8, 0.4, -0.2, 0.6][(n % 4) as usize];
    let body = json!([
        {"event_id": format!("reply-{n}"), "type": "ai.message.reply", "agent_id": a,
         "user_id": u, "occurred_at_ms": at - 3_000, "message_id": m,
         "traits": {"verbosity": (n % 10) as f64 / 10.0}},
        {"event_id": format!("feedback-{n}"), "type": "feedback.created", "agent_id": a,
         "user_id": u, "occurred_at_ms": at - 2_000, "value": value, "source_id": m},
        {"event_id": format!("action-{n}"), "type": "ai.action", "agent_id": a, "user_id": u,
         "occurred_at_ms": at - 1_000, "action": "open_pull_request", "success": !n.is_multiple_of(3)},
        {"event_id": format!("ended-{n}"), "type": "session.ended", "agent_id": a, "user_id": u,
         "occurred_at_ms": at, "session_id": format!("conversation-{n}"),
         "duration_seconds": 95.0, "message_count": 6},
    ]);
    c.send(Family::Events, "POST /v1/events", 202, &body)
        .await?;
    Some(())
}

async fn agent_reads(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Agents;
    let a = agent(n);
    let reads: [(&'static str, String); 5] = [
        ("GET /v1/agents/{id}", format!("/v1/agents/{a}")),
        (
            "GET /v1/agents/{id}/learning",
            format!("/v1/agents/{a}/learning"),
        ),
        (
            "GET /v1/agents/{id}/replies/{message_id}",
            format!("/v1/agents/{a}/replies/seed"),
        ),
        (
            "GET /v1/agents/{id}/route",
            format!("/v1/agents/{a}/route?key={}", user(n)),
        ),
        (
            "GET /v1/agents/{id}/versions",
            format!("/v1/agents/{a}/versions"),
        ),
    ];
    for (route, path) in reads {
        c.call(f, route, 200, c.get(&path)).await?;
    }
    Some(())
}

/// A new agent each time (the registry grows as it would), patched and read back.
async fn agent_writes(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Agents;
    let id = format!("soak-{n}");
    let body = json!({"agent_id": id, "name": "Soak", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs."});
    c.send(f, "POST /v1/agents", 201, &body).await?;
    let path = format!("/v1/agents/{id}");
    let body = json!({"base_prompt": "You fix bugs, with a test for each."});
    c.call(f, "PATCH /v1/agents/{id}", 200, c.patch(&path, &body))
        .await?;
    Some(())
}

async fn learning(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Learning;
    let a = agent(n);
    let path = format!("/v1/agents/{a}/learning/update");
    let request = c.request(reqwest::Method::POST, &path);
    c.call(f, "POST /v1/agents/{id}/learning/update", 200, request)
        .await?;
    let path = format!("/v1/agents/{a}/learning/settings");
    let body = json!({"trusted": false, "shadow": false});
    c.call(
        f,
        "PUT /v1/agents/{id}/learning/settings",
        200,
        c.put(&path, &body),
    )
    .await?;
    let path = format!("/v1/agents/{a}/learning/unfreeze");
    let request = c.request(reqwest::Method::POST, &path);
    c.call(f, "POST /v1/agents/{id}/learning/unfreeze", 200, request)
        .await?;
    Some(())
}

async fn stats(c: &mut Client) -> Option<()> {
    let f = Family::Stats;
    let reads: [(&'static str, &str); 6] = [
        ("GET /v1/kpis", "/v1/kpis"),
        ("GET /v1/kpis", "/v1/kpis?from=2026-01-01&to=2099-12-31"),
        ("GET /v1/attributions/stats", "/v1/attributions/stats"),
        ("GET /v1/agents/ranking", "/v1/agents/ranking?by=sum"),
        ("GET /v1/judges/usage", "/v1/judges/usage"),
        ("GET /v1/privacy/budget", "/v1/privacy/budget"),
    ];
    for (route, path) in reads {
        c.call(f, route, 200, c.get(path)).await?;
    }
    Some(())
}

/// The first page of each list, and the second when the first names one.
async fn lists(c: &mut Client) -> Option<()> {
    let f = Family::Lists;
    let pages: [(&'static str, &str, u32); 5] = [
        ("GET /v1/agents", "/v1/agents", 10),
        ("GET /v1/training-examples", "/v1/training-examples", 20),
        ("GET /v1/attributions", "/v1/attributions", 20),
        ("GET /v1/training-runs", "/v1/training-runs", 10),
        (
            "GET /v1/agents/{id}/versions",
            "/v1/agents/agent-0/versions",
            10,
        ),
    ];
    for (route, path, limit) in pages {
        let page = format!("{path}?limit={limit}");
        let first = c.call(f, route, 200, c.get(&page)).await?;
        let next = first
            .body
            .get("next_cursor")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(first.next_cursor);
        if let Some(cursor) = next {
            let page = format!("{page}&cursor={}", escape(&cursor));
            c.call(f, route, 200, c.get(&page)).await?;
        }
    }
    let path = "/v1/training-examples/export?limit=20";
    c.call(f, "GET /v1/training-examples/export", 200, c.get(path))
        .await?;
    Some(())
}

/// `value` percent-encoded for a query string.
fn escape(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Reads one of the tenant's configurations and writes it back unchanged.
async fn config(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Config;
    let path = format!(
        "/v1/config/{}",
        CONFIGS[(n % CONFIGS.len() as u64) as usize]
    );
    let current = c
        .call(f, "GET /v1/config/{name}", 200, c.get(&path))
        .await?;
    c.call(f, "PUT /v1/config/{name}", 200, c.put(&path, &current.body))
        .await?;
    Some(())
}

/// No judge provider: the critic abstains and the gate escalates, with a 200.
async fn gate(c: &mut Client, n: u64) -> Option<()> {
    let stage = ["triage", "research", "response"][(n % 3) as usize];
    let body = json!({"artifact": "The pager rounds the last page down; the fix rounds up.",
        "task": "Triage issue #12: the last page of results is missing", "refinements": n % 3});
    let path = format!("/v1/gates/{stage}/check");
    c.call(
        Family::Gates,
        "POST /v1/gates/{stage}/check",
        200,
        c.post(&path, &body),
    )
    .await?;
    Some(())
}

/// The agent the training runs train, with a base model of its own.
const TRAINEE: &str = "trainee";
/// The tiny base model's whole vocabulary: the characters of the trainee's conversations.
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789 :+=?\n";
/// How long a training run may take before it counts as a failure.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// A trainer config small enough that a run takes seconds on the tiny model.
fn train_config(seed: u64) -> Value {
    json!({"seed": seed, "checkpoint_every": 0,
        "sft": {"epochs": 4, "batch_size": 8, "learning_rate": 0.003},
        "grpo": {"steps": 4, "learning_rate": 0.001}})
}

async fn outcomes(c: &mut Client, n: u64) -> Option<()> {
    let reward = |k: u64| ((n + k) % 11) as f64 / 5.0 - 1.0;
    let body = json!({"outcomes": [
        {"version": "v1", "reward": reward(0)},
        {"version": "v1", "reward": reward(3), "safety_violation": n.is_multiple_of(10)},
        {"version": "v1", "reward": reward(7), "reward_hacking": n.is_multiple_of(15)}]});
    let path = format!("/v1/agents/{TRAINEE}/outcomes");
    let route = "POST /v1/agents/{id}/outcomes";
    c.call(Family::Training, route, 200, c.post(&path, &body))
        .await?;
    Some(())
}

/// One training run at a time, as the local runner trains them; a client that finds one in
/// flight lists the trainee's runs instead.
async fn training_run(c: &mut Client, n: u64) -> Option<()> {
    if c.shared.training.swap(true, Ordering::AcqRel) {
        let path = format!("/v1/training-runs?agent_id={TRAINEE}&limit=5");
        c.call(Family::Training, "GET /v1/training-runs", 200, c.get(&path))
            .await?;
        return Some(());
    }
    let done = run_lifecycle(c, n).await;
    c.shared.training.store(false, Ordering::Release);
    done
}

/// A new run (its seed makes it one), read; every other run is cancelled at once, the others
/// are waited for and promoted, which the gate grants (200) or refuses with its numbers (409;
/// with the soak's lenient gate, only if the candidate breaks a live or safety check).
async fn run_lifecycle(c: &mut Client, n: u64) -> Option<()> {
    let f = Family::Training;
    let body = json!({"agent_id": TRAINEE, "dataset_id": c.shared.dataset,
        "config": train_config(n)});
    let route = "POST /v1/training-runs";
    let created = c.send(f, route, 201, &body).await?;
    let id = c.text(f, route, &created, "run_id")?;
    let path = format!("/v1/training-runs/{id}");
    c.call(f, "GET /v1/training-runs/{id}", 200, c.get(&path))
        .await?;
    if n.is_multiple_of(2) {
        // 409 only if the run finished between the read and the cancel.
        let route = "POST /v1/training-runs/{id}/cancel";
        let request = c.request(reqwest::Method::POST, &format!("{path}/cancel"));
        c.call_any(f, route, &[200, 409], request).await?;
        c.shared.runs[0].fetch_add(1, Ordering::Relaxed);
        return Some(());
    }
    let run = finished(c, &path).await?;
    if run["status"] != "succeeded" {
        let what = format!("run did not succeed: {run}");
        c.shared.fail(f, "GET /v1/training-runs/{id}", what);
        return None;
    }
    let route = "POST /v1/training-runs/{id}/promote";
    let request = c.request(reqwest::Method::POST, &format!("{path}/promote"));
    let promoted = c.call_any(f, route, &[200, 409], request).await?;
    if promoted.status == 409 && !promoted.body["decision"].is_object() {
        let what = format!("a refusal without the gate's numbers: {}", promoted.body);
        c.shared.fail(f, route, what);
        return None;
    }
    let refused = usize::from(promoted.status == 409);
    c.shared.runs[1 + refused].fetch_add(1, Ordering::Relaxed);
    Some(())
}

/// Polls the run at `path` until it has finished; its last state.
async fn finished(c: &mut Client, path: &str) -> Option<Value> {
    let f = Family::Training;
    let route = "GET /v1/training-runs/{id}";
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        let run = c.call(f, route, 200, c.get(path)).await?.body;
        if matches!(
            run["status"].as_str(),
            Some("succeeded" | "failed" | "cancelled")
        ) {
            return Some(run);
        }
        if Instant::now() > deadline {
            c.shared.fail(f, route, format!("run not finished: {run}"));
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The trainee, its base model, trajectories, a dataset built from them by the dataset job
/// (`agentrl dataset build`) and a first run, whose version `v1` the outcomes name. Returns
/// the dataset's id.
async fn seed_training(c: &mut Client, data_dir: &Path) -> Option<String> {
    let f = Family::Training;
    let model = data_dir.join("objects/models/soak-tiny");
    if let Err(e) = agentrl_train::demo::write_base_model(&model, ALPHABET, 0) {
        c.shared
            .fail(f, "setup", format!("writing the base model: {e}"));
        return None;
    }
    let body = json!({"agent_id": TRAINEE, "name": "Sum solver", "type": "math",
        "model": {"provider": "self-hosted", "name": "soak-tiny"}, "base_model": "soak-tiny"});
    c.send(f, "POST /v1/agents", 201, &body).await?;
    // Eight sums answered twice, right and off by one, each pair a group.
    let (prompts, candidates) = (8, 2);
    for p in 0..prompts {
        let (a, b) = (p % 5 + 1, p / 5 + 2);
        for k in 0..candidates {
            let body = json!({"trajectory_id": format!("sum-{p}-{k}"), "agent_id": TRAINEE,
                "conversation_id": format!("sum-{p}"), "group_id": format!("sum-{p}"),
                "turns": [{"role": "user", "content": format!("what is {a}+{b}?")},
                          {"role": "assistant", "content": format!("{a}+{b}={}", a + b + k)}],
                "final_outcome": {"success": k == 0, "reward": if k == 0 { 1.0 } else { 0.0 }}});
            c.send(f, "POST /v1/trajectories", 202, &body).await?;
        }
    }
    let dataset = build_dataset(c, data_dir, prompts * candidates).await?;
    // A gate that lets any candidate through: each promoted run is the next one's base, so
    // the registry and the serving version change all along the run.
    let body = json!({"min_reward_gain": -1.0, "max_safety_rise": 1.0});
    c.send(Family::Config, "PUT /v1/config/promotion-gate", 200, &body)
        .await?;
    let body = json!({"agent_id": TRAINEE, "dataset_id": dataset, "config": train_config(0)});
    let route = "POST /v1/training-runs";
    let created = c.send(f, route, 201, &body).await?;
    let id = c.text(f, route, &created, "run_id")?;
    let run = finished(c, &format!("/v1/training-runs/{id}")).await?;
    if run["model_version"] != "v1" {
        c.shared
            .fail(f, "setup", format!("the first run registered no v1: {run}"));
        return None;
    }
    Some(dataset)
}

/// Runs the dataset job until the trajectories the worker ingests are all in one dataset.
async fn build_dataset(c: &mut Client, data_dir: &Path, trajectories: u64) -> Option<String> {
    let f = Family::Training;
    let rules = data_dir.join("soak-rules.json");
    let text = r#"{"min_positive_feedback": 0, "min_high_quality_interactions": 0,
        "validation_fraction": 0.25, "near_duplicate_jaccard": 1.0}"#;
    if let Err(e) = std::fs::write(&rules, text) {
        c.shared.fail(f, "setup", format!("writing the rules: {e}"));
        return None;
    }
    let mut last = String::new();
    for _ in 0..60 {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentrl"))
            .args(["dataset", "build", "--data-dir"])
            .arg(data_dir)
            .arg("--rules")
            .arg(&rules)
            .env("RUST_LOG", "warn")
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                c.shared
                    .fail(f, "setup", format!("agentrl dataset build: {e}"));
                return None;
            }
        };
        let manifests: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let manifest = &manifests[0];
        let counts = &manifest["counts"];
        let built = counts["train_trajectories"].as_u64().unwrap_or(0)
            + counts["validation_trajectories"].as_u64().unwrap_or(0);
        if output.status.success() && built == trajectories {
            return manifest["dataset_id"].as_str().map(str::to_owned);
        }
        last = format!(
            "{} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    c.shared
        .fail(f, "setup", format!("no complete dataset: {last}"));
    None
}

/// Registers the agents and gives each a learning state and a reply the reads can find.
async fn seed(c: &mut Client) -> Option<()> {
    // The server requests no dataset during the load (the one the training runs use is built
    // before it): the dataset job is a batch job with a bench of its own, and its first run
    // would be a one-off step in the memory series.
    let body = json!({"dataset": {"min_positive": 1_000_000_000_u64}});
    c.send(Family::Config, "PUT /v1/config/learning", 200, &body)
        .await?;
    let at = now_ms_i64();
    for k in 0..AGENTS {
        let a = format!("agent-{k}");
        let body = json!({"agent_id": a, "name": format!("Agent {k}"), "type": "coding",
            "model": {"provider": "self-hosted", "name": "qwen-tiny"}});
        c.send(Family::Agents, "POST /v1/agents", 201, &body)
            .await?;
        let body = json!([
            {"event_id": format!("seed-reply-{k}"), "type": "ai.message.reply", "agent_id": a,
             "user_id": "user-0", "occurred_at_ms": at - 1_000, "message_id": "seed",
             "traits": {"verbosity": 0.5}},
            {"event_id": format!("seed-feedback-{k}"), "type": "feedback.created",
             "agent_id": a, "user_id": "user-0", "occurred_at_ms": at, "value": 0.5,
             "source_id": "seed"}]);
        c.send(Family::Events, "POST /v1/events", 202, &body)
            .await?;
    }
    for k in 0..AGENTS {
        let url = format!("{}/v1/agents/agent-{k}/replies/seed", c.base);
        let mut tries = 0;
        loop {
            let response = c.http.get(&url).bearer_auth(KEY).send().await.ok()?;
            if response.status().is_success() {
                break;
            }
            tries += 1;
            if tries > 600 {
                let what = format!("agent-{k}'s seed reply never arrived");
                c.shared.fail(
                    Family::Agents,
                    "GET /v1/agents/{id}/replies/{message_id}",
                    what,
                );
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Some(())
}

/// One sample of the server process and the machine.
struct Point {
    t_s: f64,
    requests: u64,
    rss_kb: u64,
    fds: u64,
    threads: u64,
    load: f64,
}

/// The server's `VmRSS` (kB), threads and open descriptors; `None` once it is gone.
fn process(pid: u32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .map(str::to_owned)
    };
    if field("State:").as_deref() == Some("Z") {
        return None;
    }
    let rss_kb = field("VmRSS:")?.parse().ok()?;
    let threads = field("Threads:")?.parse().ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss_kb, threads, fds))
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn sample(pid: u32, shared: &Shared) -> Option<Point> {
    let (rss_kb, threads, fds) = process(pid)?;
    Some(Point {
        t_s: shared.started.elapsed().as_secs_f64(),
        requests: shared.requests.load(Ordering::Relaxed),
        rss_kb,
        fds,
        threads,
        load: load_average(),
    })
}

/// Samples every [`SAMPLE_EVERY`] until `deadline`; stops the clients if the server is gone.
fn sampler(pid: u32, shared: Arc<Shared>, deadline: Instant) -> Vec<Point> {
    let mut points = Vec::new();
    let mut next = shared.started;
    loop {
        match sample(pid, &shared) {
            Some(p) => points.push(p),
            None => {
                eprintln!("the server process is gone");
                shared.stop.store(true, Ordering::Relaxed);
                return points;
            }
        }
        next += SAMPLE_EVERY;
        if next > deadline + Duration::from_millis(500) || shared.stop.load(Ordering::Relaxed) {
            return points;
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// Every file under `dir` with its size, by path relative to `root`.
fn files(root: &Path, dir: &Path, into: &mut Vec<(String, u64)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match entry.metadata() {
            Ok(m) if m.is_dir() => files(root, &entry.path(), into),
            Ok(m) => {
                let path = entry.path();
                let name = path.strip_prefix(root).unwrap_or(&path);
                into.push((name.display().to_string(), m.len()));
            }
            Err(_) => {}
        }
    }
}

/// `p` of sorted latencies (µs), in ms.
fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1]) / 1_000.0
}

/// Least-squares slope of `y` over `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x / n, sy + y / n));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), (x, y)| {
        (sxy + (x - mx) * (y - my), sxx + (x - mx) * (x - mx))
    });
    if sxx == 0.0 { 0.0 } else { sxy / sxx }
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1_024.0
}

fn main() {
    let minutes = arg("--minutes", 10);
    let clients = arg("--clients", 8);
    let run_s = minutes * 60;
    let warm_up_s = WARM_UP_MAX_S.min(run_s / 5);
    let dir = tempfile::tempdir().unwrap();
    let mut command = support::serve(dir.path());
    // Embedded stores, and no judge provider: nothing leaves loopback.
    for var in [
        "AGENTRL_AWS",
        "AGENTRL_JUDGE_BASE_URL",
        "AGENTRL_JUDGE_API_KEY",
    ] {
        command.env_remove(var);
    }
    let server = support::start(command);
    let pid = server.child.id();
    let base = server.base.clone();
    let log = server.log.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let setup = Shared::new(String::new());
    let seeded = runtime.block_on(async {
        let mut c = Client::new(&base, setup.clone());
        seed(&mut c).await?;
        seed_training(&mut c, dir.path()).await
    });
    let Some(dataset) = seeded else {
        eprintln!("setup failed: {:?}", setup.failures.lock().unwrap().first);
        let _ = server.stop();
        drop(dir);
        std::process::exit(1);
    };

    let shared = Shared::new(dataset);
    let deadline = shared.started + Duration::from_secs(run_s);
    let sampling = {
        let shared = shared.clone();
        std::thread::spawn(move || sampler(pid, shared, deadline))
    };
    let samples: Vec<Sample> = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|k| {
                let mut c = Client::new(&base, shared.clone());
                tokio::spawn(async move {
                    let mut i = 0u64;
                    while Instant::now() < deadline && !c.shared.stop.load(Ordering::Relaxed) {
                        let n = k << 32 | i;
                        if i % OPENAPI_EVERY == OPENAPI_EVERY - 1 {
                            openapi(&mut c).await;
                        }
                        let step = SCHEDULE[((i + k) % SCHEDULE.len() as u64) as usize];
                        run(step, &mut c, n).await;
                        i += 1;
                    }
                    c.samples
                })
            })
            .collect();
        let mut samples = Vec::new();
        for t in tasks {
            samples.extend(t.await.unwrap());
        }
        samples
    });
    let points = sampling.join().unwrap();
    // The clients' connections are closed now: the descriptors they held must be released.
    std::thread::sleep(Duration::from_secs(3));
    let idle = process(pid);
    // Sized before the stop, which checkpoints SQLite's write-ahead log.
    let mut data = Vec::new();
    files(dir.path(), dir.path(), &mut data);
    data.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    let exit = server.stop();
    drop(dir);

    let run = Run {
        minutes,
        clients,
        warm_up_s,
        run_s,
        idle,
        exit,
        data,
    };
    report(&run, &shared, &samples, &points, &log.lock().unwrap());
}

/// The run's settings and how it ended.
struct Run {
    minutes: u64,
    clients: u64,
    warm_up_s: u64,
    run_s: u64,
    /// RSS (kB), threads and descriptors of the server once the clients were gone.
    idle: Option<(u64, u64, u64)>,
    exit: Option<std::process::ExitStatus>,
    /// The data directory's files and their sizes, once the load was over, largest first.
    data: Vec<(String, u64)>,
}

fn report(run: &Run, shared: &Shared, samples: &[Sample], points: &[Point], log: &support::Log) {
    let Run { idle, exit, .. } = *run;
    let failures = shared.failures.lock().unwrap();
    let failed = shared.failed.load(Ordering::Relaxed);
    let elapsed = points.last().map_or(f64::NAN, |p| p.t_s);
    println!(
        "soak: {} min, {} clients, warm-up {} s, {} cores, Linux {}, {} requests answered as expected, {failed} failed",
        run.minutes,
        run.clients,
        run.warm_up_s,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
        samples.len(),
    );

    println!();
    println!(
        "| route family | requests | failed | P50 ms | P99 ms | max ms | P50 ms, first minute after the warm-up | P50 ms, last minute |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut by_family: Vec<Vec<u32>> = vec![Vec::new(); FAMILIES.len()];
    // Whether a route slows down as the stores grow: its median early and late in the run.
    let mut early: Vec<Vec<u32>> = vec![Vec::new(); FAMILIES.len()];
    let mut late: Vec<Vec<u32>> = vec![Vec::new(); FAMILIES.len()];
    let warm_ms = run.warm_up_s * 1_000;
    let end_ms = run.run_s * 1_000;
    for s in samples {
        let (family, at) = (s.family as usize, u64::from(s.at_ms));
        by_family[family].push(s.us);
        if (warm_ms..warm_ms + 60_000).contains(&at) {
            early[family].push(s.us);
        }
        if at + 60_000 >= end_ms {
            late[family].push(s.us);
        }
    }
    let mut all: Vec<u32> = samples.iter().map(|s| s.us).collect();
    all.sort_unstable();
    for (i, latencies) in by_family.iter_mut().enumerate() {
        latencies.sort_unstable();
        early[i].sort_unstable();
        late[i].sort_unstable();
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2} |",
            FAMILIES[i],
            latencies.len() as u64 + failures.by_family[i],
            failures.by_family[i],
            percentile_ms(latencies, 0.50),
            percentile_ms(latencies, 0.99),
            percentile_ms(latencies, 1.0),
            percentile_ms(&early[i], 0.50),
            percentile_ms(&late[i], 0.50),
        );
    }
    println!(
        "| **all** | {} | {failed} | {:.2} | {:.2} | {:.1} | | |",
        all.len() as u64 + failed,
        percentile_ms(&all, 0.50),
        percentile_ms(&all, 0.99),
        percentile_ms(&all, 1.0),
    );
    println!(
        "throughput: {:.0} requests/s over {elapsed:.0} s",
        all.len() as f64 / elapsed
    );
    let [cancelled, promoted, refused] = shared.runs.each_ref().map(|n| n.load(Ordering::Relaxed));
    println!(
        "training runs: {cancelled} cancelled; {} trained to the end: {promoted} promoted, {refused} refused by the gate",
        promoted + refused
    );

    // Latency per sampling window, to see whether it drifts as the stores grow.
    let mut windows: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for s in samples {
        let w = u64::from(s.at_ms) / SAMPLE_EVERY.as_millis() as u64;
        windows.entry(w).or_default().push(s.us);
    }
    println!();
    println!("| t s | requests/s | P99 ms | RSS MB | fds | threads | load (1 min) |");
    println!("|---|---|---|---|---|---|---|");
    for (i, p) in points.iter().enumerate() {
        let (rate, p99) = match i.checked_sub(1).map(|j| &points[j]) {
            Some(q) => {
                let rate = (p.requests - q.requests) as f64 / (p.t_s - q.t_s);
                let w = windows.get_mut(&(i as u64 - 1)).map_or(f64::NAN, |l| {
                    l.sort_unstable();
                    percentile_ms(l, 0.99)
                });
                (format!("{rate:.0}"), format!("{w:.2}"))
            }
            None => ("–".to_owned(), "–".to_owned()),
        };
        println!(
            "| {:.0} | {rate} | {p99} | {:.1} | {} | {} | {:.2} |",
            p.t_s,
            mb(p.rss_kb),
            p.fds,
            p.threads,
            p.load
        );
    }
    if let Some((rss_kb, threads, fds)) = idle {
        println!(
            "| after the load | – | – | {:.1} | {fds} | {threads} | {:.2} |",
            mb(rss_kb),
            load_average()
        );
    }
    let loads: Vec<f64> = points.iter().skip(1).map(|p| p.load).collect();
    if !loads.is_empty() {
        println!(
            "load average (1 min) during the run: {:.2}–{:.2}, mean {:.2}",
            loads.iter().copied().fold(f64::INFINITY, f64::min),
            loads.iter().copied().fold(0.0, f64::max),
            loads.iter().sum::<f64>() / loads.len() as f64
        );
    }

    let mut ok = failed == 0;
    let post: Vec<&Point> = points
        .iter()
        .filter(|p| p.t_s + 1.0 >= run.warm_up_s as f64)
        .collect();
    println!();
    if post.len() < 3 {
        println!("too few samples after the warm-up to judge growth");
        ok = false;
    } else {
        let (first, warm, last) = (&points[0], post[0], post[post.len() - 1]);
        let max_rss = points.iter().map(|p| p.rss_kb).max().unwrap_or(0);
        let line: Vec<(f64, f64)> = post.iter().map(|p| (p.t_s, mb(p.rss_kb))).collect();
        let per_s = slope(&line);
        let trend = per_s * run.run_s as f64;
        let allowance = RSS_SHARE * mb(warm.rss_kb) + RSS_SLACK_MB;
        let grown = mb(last.rss_kb) - mb(warm.rss_kb);
        let rss_flat = trend < allowance && grown < allowance;
        println!(
            "RSS MB: first {:.1}, after warm-up {:.1}, last {:.1}, max {:.1}; trend after warm-up {:+.2} MB/min, {trend:+.1} MB over the run, last − after warm-up {grown:+.1} MB (allowed < {allowance:.1}): {}",
            mb(first.rss_kb),
            mb(warm.rss_kb),
            mb(last.rss_kb),
            mb(max_rss),
            per_s * 60.0,
            if rss_flat { "flat" } else { "GROWING" }
        );
        let max_fds = points.iter().map(|p| p.fds).max().unwrap_or(0);
        let idle_fds = idle.map(|(_, _, fds)| fds);
        let fds_flat = last.fds <= warm.fds + FD_SLACK
            && idle_fds.is_some_and(|fds| fds <= warm.fds + FD_SLACK);
        println!(
            "fds: first {}, after warm-up {}, last {}, max {max_fds}, after the load {} (allowed ≤ {}): {}",
            first.fds,
            warm.fds,
            last.fds,
            idle_fds.map_or("–".to_owned(), |f| f.to_string()),
            warm.fds + FD_SLACK,
            if fds_flat { "flat" } else { "GROWING" }
        );
        ok &= rss_flat && fds_flat;
    }
    let data = &run.data;
    let total: u64 = data.iter().map(|(_, bytes)| bytes).sum();
    println!(
        "data directory at the end: {:.1} MB in {} files; the largest:",
        total as f64 / 1e6,
        data.len()
    );
    for (name, bytes) in data.iter().take(4) {
        println!("  {name}: {:.1} MB", *bytes as f64 / 1e6);
    }

    println!(
        "server stderr after its listening line: {} lines, {} of a panic",
        log.lines, log.panics
    );
    for line in &log.first {
        println!("  {line}");
    }
    ok &= log.panics == 0;
    if failed > 0 {
        println!();
        println!("failures by route:");
        for (route, n) in &failures.by_route {
            println!("  {route}: {n}");
        }
        println!("first failures:");
        for f in &failures.first {
            println!("  {f}");
        }
    }
    let clean = exit.is_some_and(|s| s.success());
    println!(
        "SIGTERM: {}",
        exit.map_or("still running after 30 s (killed)".to_owned(), |s| s
            .to_string())
    );
    ok &= clean;
    println!("verdict: {}", if ok { "PASS" } else { "FAIL" });
    if !ok {
        std::process::exit(1);
    }
}
