//! Realistic synthetic turn rows, shared by the benches that need a turn table
//! (`parquet_write` here, the dataset job's `build` bench includes this file by path).

use agentrl_turns::TurnRow;

const WORDS: &[&str] = &[
    "the",
    "file",
    "function",
    "returns",
    "error",
    "test",
    "value",
    "list",
    "user",
    "request",
    "response",
    "build",
    "cargo",
    "failed",
    "passed",
    "config",
    "module",
    "import",
    "update",
    "database",
    "query",
    "index",
    "table",
    "column",
    "row",
    "schema",
    "version",
    "deploy",
    "run",
    "check",
    "fix",
    "bug",
    "issue",
    "branch",
    "commit",
    "merge",
    "review",
    "change",
    "line",
    "path",
    "directory",
    "output",
    "input",
    "string",
    "number",
    "object",
    "array",
    "field",
    "type",
    "struct",
    "trait",
    "impl",
    "async",
    "await",
    "thread",
    "lock",
    "memory",
    "cache",
    "timeout",
    "retry",
    "token",
    "model",
    "reward",
    "policy",
    "step",
    "episode",
    "agent",
    "tool",
    "call",
    "argument",
    "result",
    "search",
    "read",
    "write",
    "open",
    "close",
    "parse",
    "format",
    "because",
    "so",
    "then",
    "now",
    "will",
    "should",
    "could",
    "let",
    "me",
    "look",
    "at",
    "this",
    "I",
    "see",
    "that",
    "it",
    "is",
    "was",
    "not",
    "a",
    "an",
    "of",
    "to",
    "in",
    "for",
    "on",
    "with",
];
const TOOLS: &[&str] = &[
    "read_file",
    "run_tests",
    "search_code",
    "edit_file",
    "shell",
];
const VOCAB: u64 = 151_936;

/// splitmix64 stream: fast, reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> usize {
        (lo + self.below(hi - lo + 1)) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn hex(&mut self, chars: usize) -> String {
        let mut s = String::with_capacity(chars);
        while s.len() < chars {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(chars);
        s
    }
    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
    fn text(&mut self, words: usize) -> String {
        let mut s = String::with_capacity(words * 7);
        for k in 0..words {
            if k > 0 {
                s.push(if self.chance(0.08) { '\n' } else { ' ' });
            }
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        s
    }
    fn tokens(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.below(VOCAB) as i32).collect()
    }
}

/// State of the trajectory being generated.
struct Episode {
    id: String,
    conversation_id: String,
    agent: u64,
    user_id: Option<String>,
    group_id: String,
    turn_count: i32,
    next_turn: i32,
    context: Vec<i32>,
    message_id: String,
    episode_reward: f64,
    success: bool,
    truncated: bool,
    dp_epsilon: Option<f64>,
}

/// Endless realistic rows: system, user, then assistant/tool turns ending on assistant.
pub struct Synthetic {
    rng: Rng,
    episode: Option<Episode>,
    system_prompts: Vec<(String, Vec<i32>)>,
    clock_ms: i64,
}

impl Synthetic {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let system_prompts = (0..5)
            .map(|_| {
                let words = rng.range(80, 200);
                (rng.text(words), rng.tokens(words * 4 / 3))
            })
            .collect();
        Self {
            rng,
            episode: None,
            system_prompts,
            clock_ms: 1_795_000_000_000,
        }
    }

    fn start_episode(&mut self) -> Episode {
        let r = &mut self.rng;
        let agent = r.below(self.system_prompts.len() as u64);
        let success = r.chance(0.6);
        Episode {
            id: r.uuid(),
            conversation_id: r.uuid(),
            agent,
            user_id: r.chance(0.9).then(|| r.hex(64)),
            group_id: format!("task-{:05}", r.below(20_000)),
            turn_count: r.range(4, 16) as i32,
            next_turn: 0,
            context: self.system_prompts[agent as usize].1.clone(),
            message_id: r.uuid(),
            episode_reward: if success { 1.0 } else { 0.0 } + (r.unit() - 0.5) * 0.1,
            success,
            truncated: r.chance(0.05),
            dp_epsilon: r.chance(0.3).then_some(1.0),
        }
    }
}

impl Iterator for Synthetic {
    type Item = TurnRow;

    fn next(&mut self) -> Option<TurnRow> {
        let mut episode = match self.episode.take() {
            Some(e) if e.next_turn < e.turn_count => e,
            _ => self.start_episode(),
        };
        let turn = episode.next_turn;
        episode.next_turn += 1;
        self.clock_ms += 3;
        let r = &mut self.rng;
        let last = turn + 1 == episode.turn_count;
        let mut row = TurnRow {
            trajectory_id: episode.id.clone(),
            conversation_id: episode.conversation_id.clone(),
            turn_index: turn,
            turn_count: episode.turn_count,
            agent_id: format!("agent-{}", episode.agent),
            user_id: episode.user_id.clone(),
            group_id: Some(episode.group_id.clone()),
            policy_version: Some(format!("policy-2026-11-{:02}", 15 + episode.agent)),
            episode_reward: Some(episode.episode_reward),
            episode_success: Some(episode.success),
            termination_reason: Some(
                if episode.truncated {
                    "max_turns"
                } else {
                    "done"
                }
                .into(),
            ),
            truncated: episode.truncated,
            dp_epsilon: episode.dp_epsilon,
            pii_replacements: if r.chance(0.1) {
                r.range(1, 3) as i32
            } else {
                0
            },
            message_id: episode.message_id.clone(),
            ingested_at_ms: self.clock_ms,
            ..TurnRow::default()
        };
        match turn {
            0 => {
                row.role = "system".into();
                row.content = self.system_prompts[episode.agent as usize].0.clone();
            }
            1 => {
                row.role = "user".into();
                let words = r.range(10, 60);
                row.content = r.text(words);
                episode.context.extend(r.tokens(words * 4 / 3));
            }
            _ if turn % 2 == 0 || last => {
                row.role = "assistant".into();
                let words = r.range(20, 150);
                row.content = r.text(words);
                let extra = r.range(10, 60);
                let response = r.tokens(words * 4 / 3 + extra);
                row.prompt_token_ids = Some(episode.context.clone());
                row.loss_mask = Some(vec![1; response.len()]);
                row.behavior_logprobs = Some(
                    (0..response.len())
                        .map(|_| -(r.unit().powi(3) * 6.0) as f32)
                        .collect(),
                );
                episode.context.extend_from_slice(&response);
                row.response_token_ids = Some(response);
                row.tokenizer = Some("Qwen/Qwen2.5-7B-Instruct@chatml".into());
                if !last {
                    let tool = TOOLS[r.below(TOOLS.len() as u64) as usize];
                    row.tool_name = Some(tool.into());
                    row.tool_arguments = Some(format!(
                        "{{\"path\": \"src/{}.rs\", \"line\": {}}}",
                        WORDS[r.below(WORDS.len() as u64) as usize],
                        r.below(500)
                    ));
                }
                let (gain, format, progress) = (r.unit(), r.unit(), r.unit());
                row.reward_information_gain = Some(gain);
                row.reward_format = Some(format);
                row.reward_progress = Some(progress);
                row.turn_reward = Some(0.3 * gain + 0.2 * format + 0.5 * progress);
                row.tool_call_valid = (!last).then(|| r.unit());
                row.tool_choice = (!last).then(|| r.unit());
                row.tool_efficiency = (!last).then(|| r.unit());
                row.safety_violation = r.chance(0.002);
            }
            _ => {
                row.role = "tool".into();
                row.tool_name = Some(TOOLS[r.below(TOOLS.len() as u64) as usize].into());
                let words = r.range(30, 300);
                let result = r.text(words);
                episode.context.extend(r.tokens(words * 4 / 3));
                if r.chance(0.03) {
                    row.error = Some("exit status 101: test failed".into());
                    row.tool_error_handling = Some(r.unit());
                }
                row.content = result.clone();
                row.tool_result = Some(result);
            }
        }
        self.episode = Some(episode);
        Some(row)
    }
}
