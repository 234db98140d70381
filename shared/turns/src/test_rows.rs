//! Deterministic rows for tests: one with every nullable column null, one with none null, then
//! varied rows mixing nulls, empty and non-empty lists, unicode and control characters.
//!
//! Shared by the unit tests and `tests/python_readers.rs` (through `#[path]`), so both check the
//! same edge cases; `super::TurnRow` resolves in either crate.

use super::{RowToolCall, TurnRow};

const TEXTS: &[&str] = &[
    "Plain ASCII answer.",
    "",
    "naïve café — «quotes» “curly” ‘single’",
    "日本語のテキストと中文混合",
    "emoji 🦀🚀👩‍👩‍👧‍👦 and flags 🇫🇷",
    "עברית RTL mixed with English",
    "tabs\tand\nnewlines\r\n and \"quotes\" and \\backslashes\\",
    "combining e\u{301} and zero\u{200b}width",
    "{\"json\": [1, 2, {\"nested\": null}], \"ok\": true}",
];

const ROLES: &[&str] = &["system", "user", "assistant", "tool"];

/// splitmix64: reproducible variety without a dependency.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Every nullable column null, every list null, required text empty.
pub fn all_null_row() -> TurnRow {
    TurnRow {
        trajectory_id: "t-null".into(),
        conversation_id: "c-null".into(),
        agent_id: "agent-null".into(),
        role: "user".into(),
        message_id: "m-null".into(),
        ..TurnRow::default()
    }
}

/// Every column non-null, lists non-empty.
pub fn all_set_row() -> TurnRow {
    TurnRow {
        trajectory_id: "t-full".into(),
        conversation_id: "c-full".into(),
        turn_index: 3,
        turn_count: 4,
        agent_id: "agent-ü".into(),
        user_id: Some("u-hash-0f3a".into()),
        group_id: Some("g-1".into()),
        policy_version: Some("policy-7".into()),
        role: "assistant".into(),
        content: "全部 set 🦀".into(),
        tool_name: Some("search".into()),
        tool_arguments: Some("{\"q\": \"rust parquet\"}".into()),
        tool_result: Some("3 hits".into()),
        error: Some("timeout after 3 s".into()),
        prompt_token_ids: Some(vec![1, 2, 3, i32::MAX, i32::MIN]),
        response_token_ids: Some(vec![42]),
        loss_mask: Some(vec![1, 0, -1, i8::MAX]),
        behavior_logprobs: Some(vec![-0.5, -1e-30, f32::MIN]),
        tokenizer: Some("qwen2.5/chatml".into()),
        turn_reward: Some(0.75),
        reward_information_gain: Some(0.1),
        reward_format: Some(1.0),
        reward_progress: Some(-0.25),
        safety_violation: true,
        tool_call_valid: Some(1.0),
        tool_choice: Some(0.5),
        tool_error_handling: Some(0.0),
        tool_efficiency: Some(f64::MAX),
        episode_reward: Some(-3.5e-7),
        episode_success: Some(false),
        termination_reason: Some("max_turns".into()),
        truncated: true,
        dp_epsilon: Some(1.0),
        pii_replacements: 2,
        message_id: "m-full".into(),
        ingested_at_ms: 1_795_000_000_123,
        tool_calls: vec![
            RowToolCall {
                id: Some("call_a".into()),
                name: "search".into(),
                arguments: "{\"q\": \"rust parquet\"}".into(),
            },
            RowToolCall {
                id: None,
                name: "édit".into(),
                arguments: "{\"path\": \"日本.rs\"".into(),
            },
        ],
        tool_call_id: Some("call_0".into()),
        content_parts: Some("[{\"type\": \"text\", \"text\": \"全部\"}]".into()),
        tools: Some("[{\"type\": \"function\", \"function\": {\"name\": \"search\"}}]".into()),
        input_tokens: Some(1_234),
        output_tokens: Some(56),
        information_gain_source: Some("turn_information_gain@1".into()),
        progress_source: Some("heuristic".into()),
    }
}

/// Row `i` of the varied sequence: trajectories of 1–8 turns.
pub fn varied_row(i: u64) -> TurnRow {
    let r = mix(i);
    let bit = |k: u32| (r >> k) & 1 == 1;
    let trajectory = i / 8;
    let turn_count = (mix(trajectory) % 8 + 1) as i32;
    let turn_index = (i % 8) as i32 % turn_count;
    let role = ROLES[(i % ROLES.len() as u64) as usize];
    let tokens = |seed: u64, len: u64| -> Vec<i32> {
        (0..len).map(|k| (mix(seed ^ k) % 151_936) as i32).collect()
    };
    let list_len = r % 40;
    // 0: null, 1: empty, else values; three independent draws so the lists vary separately.
    let shape = |k: u32| (r >> k) % 4;
    let f = |k: u32| (!bit(k)).then(|| ((r >> (k + 8)) % 2001) as f64 / 1000.0 - 1.0);
    TurnRow {
        trajectory_id: format!("traj-{trajectory:06}"),
        conversation_id: format!("conv-{:04}", trajectory / 3),
        turn_index,
        turn_count,
        agent_id: format!("agent-{}", trajectory % 5),
        user_id: bit(1).then(|| format!("{:016x}", mix(trajectory))),
        group_id: bit(2).then(|| format!("group-{}", trajectory % 11)),
        policy_version: bit(3).then(|| format!("v{}", trajectory % 4)),
        role: role.into(),
        content: format!("{} #{i}", TEXTS[(r % TEXTS.len() as u64) as usize]),
        tool_name: (role == "tool")
            .then(|| ["search", "run_tests", "édit"][(r % 3) as usize].into()),
        tool_arguments: (role == "tool" && bit(4)).then(|| format!("{{\"n\": {i}}}")),
        tool_result: (role == "tool" && bit(5)).then(|| TEXTS[(i % 9) as usize].into()),
        error: bit(6).then(|| "rate limited".into()),
        prompt_token_ids: match shape(10) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some(tokens(r, list_len * 3)),
        },
        response_token_ids: match shape(12) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some(tokens(r ^ 1, list_len)),
        },
        loss_mask: match shape(14) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some((0..list_len).map(|k| (k % 3 != 0) as i8).collect()),
        },
        behavior_logprobs: match shape(16) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some((0..list_len).map(|k| -((k % 17) as f32) / 8.0).collect()),
        },
        tokenizer: bit(18).then(|| "qwen2.5/chatml".into()),
        turn_reward: f(19),
        reward_information_gain: f(20),
        reward_format: f(21),
        reward_progress: f(22),
        safety_violation: bit(23) && bit(24),
        tool_call_valid: f(25),
        tool_choice: f(26),
        tool_error_handling: f(27),
        tool_efficiency: f(28),
        episode_reward: f(29),
        episode_success: bit(30).then(|| bit(31)),
        termination_reason: bit(32)
            .then(|| ["done", "max_turns", "error"][(r % 3) as usize].into()),
        truncated: bit(33),
        dp_epsilon: bit(34).then_some(0.5),
        pii_replacements: (r % 4) as i32,
        message_id: format!("msg-{trajectory:06}"),
        ingested_at_ms: 1_795_000_000_000 + i as i64 * 1000,
        tool_calls: if role == "assistant" {
            (0..r % 3)
                .map(|k| RowToolCall {
                    id: bit(35 + k as u32).then(|| format!("call_{i}_{k}")),
                    name: ["search", "run_tests", "édit"][((r >> 40) + k) as usize % 3].into(),
                    arguments: format!("{{\"n\": {k}}}"),
                })
                .collect()
        } else {
            Vec::new()
        },
        tool_call_id: (role == "tool" && bit(38)).then(|| format!("call_{}_0", i - 1)),
        content_parts: (role == "user" && bit(41)).then(|| {
            format!(
                "[{{\"type\": \"image_url\", \"image_url\": {{\"url\": \"https://x/{i}.png\"}}}}]"
            )
        }),
        tools: bit(39).then(|| {
            format!(
                "[{{\"type\": \"function\", \"function\": {{\"name\": \"t{}\"}}}}]",
                trajectory % 3
            )
        }),
        input_tokens: (role == "assistant" && bit(42)).then_some(((r >> 8) % 40_000) as i64),
        output_tokens: (role == "assistant" && bit(43)).then_some(((r >> 24) % 4_000) as i64),
        information_gain_source: (role == "assistant").then(|| {
            if bit(44) {
                "turn_information_gain@1"
            } else {
                "heuristic"
            }
            .to_owned()
        }),
        progress_source: (role == "assistant").then(|| {
            if bit(45) {
                "turn_task_progress@1"
            } else {
                "heuristic"
            }
            .to_owned()
        }),
    }
}

/// `n` rows: the all-null row, the all-set row, then varied rows.
pub fn rows(n: usize) -> Vec<TurnRow> {
    [all_null_row(), all_set_row()]
        .into_iter()
        .chain((0..).map(varied_row))
        .take(n)
        .collect()
}
