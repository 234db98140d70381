//! PII corpus: lines that must be scrubbed, and near misses that must survive byte for byte.
//!
//! Every credential below is a documented example or made up; none is live.

use agentrl_core::privacy::PiiKind::{self, *};
use agentrl_core::privacy::Scrubber;

/// (line, a kind that must be reported, substrings that must be gone).
const MUST_SCRUB: &[(&str, PiiKind, &[&str])] = &[
    // Emails
    (
        "Contact me at john.doe@example.com for details.",
        Email,
        &["john.doe@example.com"],
    ),
    (
        r#"{"user": {"email": "Jane_Smith+promo@mail.example.co.uk"}}"#,
        Email,
        &["Jane_Smith"],
    ),
    (
        "2024-01-15T10:30:00Z INFO login ok user=ALICE@EXAMPLE.ORG",
        Email,
        &["ALICE@"],
    ),
    (
        "send_mail(to='bob.o-reilly@sub.domain.io')",
        Email,
        &["bob.o-reilly"],
    ),
    (
        "Reply-To: <support@acme-corp.com>",
        Email,
        &["support@acme-corp.com"],
    ),
    // Phones
    (
        "Call me at +1 (555) 123-4567 tomorrow.",
        Phone,
        &["555", "4567"],
    ),
    ("UK office: +44 20 7946 0958", Phone, &["7946"]),
    ("phone: 555-123-4567", Phone, &["555-123-4567"]),
    ("(555) 123-4567 is the front desk", Phone, &["123-4567"]),
    ("whatsapp +14155552671", Phone, &["4155552671"]),
    (r#"{"tel": "+49-30-1234567"}"#, Phone, &["1234567"]),
    ("London 020 7946 0958 ext. 2", Phone, &["7946 0958"]),
    ("fax 555.123.4567", Phone, &["555.123.4567"]),
    ("Paris: 01 23 45 67 89", Phone, &["45 67 89"]),
    ("+44 (0)20 7946 0958 is the switchboard", Phone, &["7946"]),
    // Cards
    ("card 4111 1111 1111 1111 exp 12/27", Card, &["4111 1111"]),
    ("cc=4111-1111-1111-1111", Card, &["4111-1111"]),
    (
        "Mastercard 5555555555554444 charged",
        Card,
        &["5555555555554444"],
    ),
    ("amex: 3782 822463 10005", Card, &["822463"]),
    (
        r#"{"card_number": "6011111111111117"}"#,
        Card,
        &["6011111111111117"],
    ),
    ("Visa 13: 4222222222222", Card, &["4222222222222"]),
    ("JCB 3530111333300000 on file", Card, &["3530111333300000"]),
    // IP addresses
    ("Connecting to 192.168.1.1 on port 22", Ip, &["192.168.1.1"]),
    (
        "2024-01-15 10:30:00 GET /health from 10.0.0.12 200",
        Ip,
        &["10.0.0.12"],
    ),
    ("curl http://172.16.254.1:8080/api", Ip, &["172.16.254.1"]),
    ("ssh root@203.0.113.7", Ip, &["203.0.113.7"]),
    ("The server IP is 8.8.8.8.", Ip, &["8.8.8.8"]),
    ("IPv6 2001:db8::1 reachable", Ip, &["2001:db8::1"]),
    (
        "addr=2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        Ip,
        &["85a3", "7334"],
    ),
    (
        "link-local fe80::1ff:fe23:4567:890a%eth0",
        Ip,
        &["fe80", "890a"],
    ),
    ("mapped ::ffff:192.0.2.1", Ip, &["192.0.2.1", "ffff"]),
    ("[2001:db8:0:1::42]:443 refused", Ip, &["2001:db8"]),
    // AWS
    (
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        AwsAccessKey,
        &["AKIAIOSFODNN7EXAMPLE"],
    ),
    (
        "temporary creds ASIAY34FZKBOKMUTVV7A issued",
        AwsAccessKey,
        &["ASIAY34FZKBOKMUTVV7A"],
    ),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Secret,
        &["wJalrXUtnFEMI"],
    ),
    // Bearer and basic auth
    (
        "Authorization: Bearer abc123def456ghi789",
        BearerToken,
        &["abc123def456ghi789"],
    ),
    (
        r#"curl -H "Authorization: Bearer 0123456789abcdefXYZ" https://api.example.com"#,
        BearerToken,
        &["0123456789abcdefXYZ"],
    ),
    (
        "use Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0 for the call",
        BearerToken,
        &["9f8e7d6c5b4a"],
    ),
    (
        r#"headers = {"authorization": "bearer tok_live_77"}"#,
        BearerToken,
        &["tok_live_77"],
    ),
    (
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        Secret,
        &["dXNlcjpwYXNzd29yZA"],
    ),
    // Private keys
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRv\nI5j0gC+FpY3Xa8Aw==\n-----END RSA PRIVATE KEY-----\nnext line",
        PrivateKey,
        &["MIIEow", "END RSA"],
    ),
    (
        r#"{"key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"}"#,
        PrivateKey,
        &["b3BlbnNzaC1rZXkt"],
    ),
    (
        "truncated log: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7",
        PrivateKey,
        &["MIIEvQIBADANBgkq", "BKcwggSj"],
    ),
    // JWT
    (
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U expired",
        Jwt,
        &["eyJhbGci", "dozjgNry"],
    ),
    // Vendor API keys
    (
        "OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno345",
        ApiKey,
        &["abc123DEF456"],
    ),
    (
        "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'",
        ApiKey,
        &["4eC39HqLyjWDarjtT1zdp7dc"],
    ),
    (
        "restricted rk_live_51HxYzABCdefGHIjkl0123 rotated",
        ApiKey,
        &["51HxYzABC"],
    ),
    (
        "git clone https://ghp_0123456789abcdefghijklmnopqrstuvwxyz@github.com/o/r.git",
        ApiKey,
        &["ghp_0123"],
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP",
        ApiKey,
        &["11ABCDEFG"],
    ),
    (
        "SLACK_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ApiKey,
        &["AbCdEfGh"],
    ),
    (
        "maps key AIzaSyD-1234567890abcdefghijklmnopqrstu in html",
        ApiKey,
        &["AIzaSyD"],
    ),
    (
        "CI uses glpat-ABCdef123456ghiJKL7890",
        ApiKey,
        &["ABCdef123456"],
    ),
    // Generic assignments
    (r#"password = "hunter2""#, Secret, &["hunter2"]),
    ("DB_PASSWORD=s3cr3tP@ss", Secret, &["s3cr3tP@ss"]),
    (
        r#"{"api_key": "abcd1234efgh5678"}"#,
        Secret,
        &["abcd1234efgh5678"],
    ),
    (
        "client_secret: 'q8Xv2LmN0pRtYz'",
        Secret,
        &["q8Xv2LmN0pRtYz"],
    ),
    (
        "GET /cb?code=1&access_token=ya29a0AfH6SMC7x&state=2",
        Secret,
        &["ya29a0AfH6SMC7x"],
    ),
    (
        "postgres://admin:Sup3rS3cret@db.internal:5432/app",
        Secret,
        &["Sup3rS3cret"],
    ),
    (
        "    let apiKey = \"live-4f9a8c7e\";",
        Secret,
        &["live-4f9a8c7e"],
    ),
];

/// Lines that look like PII to a careless pattern but are not; they must come back unchanged.
const NEAR_MISSES: &[&str] = &[
    "Upgraded to 1.2.3 yesterday",
    "release v1.2.3.4 is out",
    "python3.11 -m venv .venv",
    "2024-01-15T10:30:00Z",
    "meeting at 10:30:00 sharp",
    "created_at: 1700000000",
    "price $1,234.56 incl. tax",
    "order 12345678 shipped",
    "pi is 3.14159",
    "id 550e8400-e29b-41d4-a716-446655440000",
    "UUID 123e4567-e89b-12d3-a456-426614174000",
    "commit da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "git checkout 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "color: #ff00aa;",
    "listening on localhost:8080",
    "card 4111 1111 1111 1112 declined",
    "date 2024-01-15",
    "ISBN 978-3-16-148410-0",
    "ISBN 9783161484100",
    "Mozilla/5.0 Chrome/120.0.6099.109 Safari/537.36",
    "OID 1.3.6.1.4.1.311",
    "version 10.0.0.1 of the firmware",
    "256.100.1.1 is not an address",
    "use std::io::Read;",
    "x :: Int -> Int",
    "MAC 00:1a:2b:3c:4d:5e",
    "loopback ::1 only",
    r#""eos_token": "</s>", "pad_token": "<pad>""#,
    "let token = tokens.next();",
    "max_tokens: 4096",
    "Password: required",
    "the bearer of bad news",
    "pip install sk-learn-extra",
    "AKIA is a prefix",
    "icon@2x.png and logo@3x.png",
    "mail user@localhost",
    "call 555-0199",
    "ZIP 02134-1234",
    "on 05-11-2024 at 10:30",
    "0xdeadbeef and 1e-10",
    "ratio 16:9 and 4:3",
    "Error at line 1234, column 56",
    "total 1,234,567 rows",
    "timestamp 2024-01-15 10:30:00.123456",
    "semver 1.0.0-beta.1+build.5",
    "secret = derive_key(seed)",
    r#"api_key = os.environ["API_KEY"]"#,
    "1+1=2 and +1 to that",
    "The score was 3-2 in 90 minutes",
    "coordinates 51.5074, -0.1278",
    "HTTP/1.1 200 OK",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "token = None",
    r#"{"password": "", "token": null}"#,
    "export PATH=$HOME/bin:$PATH",
    "日本語のテキスト 12:00 と 3.5",
];

#[test]
fn must_scrub_lines_are_scrubbed() {
    assert!(MUST_SCRUB.len() >= 40);
    let s = Scrubber::new();
    let mut failures = Vec::new();
    for (line, kind, gone) in MUST_SCRUB {
        let out = s.scrub(line);
        let leaked: Vec<_> = gone.iter().filter(|g| out.text.contains(**g)).collect();
        if !leaked.is_empty()
            || !out.found.contains_key(kind)
            || !out.text.contains(kind.placeholder())
        {
            failures.push(format!("{line:?}\n   -> {:?} {:?}", out.text, out.found));
        }
    }
    assert!(
        failures.is_empty(),
        "not scrubbed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn near_misses_survive_byte_for_byte() {
    assert!(NEAR_MISSES.len() >= 30);
    let s = Scrubber::new();
    let failures: Vec<_> = NEAR_MISSES
        .iter()
        .filter_map(|line| {
            let out = s.scrub(line);
            (out.text != *line || !out.found.is_empty())
                .then(|| format!("{line:?}\n   -> {:?} {:?}", out.text, out.found))
        })
        .collect();
    assert!(failures.is_empty(), "changed:\n{}", failures.join("\n"));
}

#[test]
fn every_kind_is_in_the_corpus() {
    for kind in PiiKind::ALL {
        let n = MUST_SCRUB.iter().filter(|(_, k, _)| *k == kind).count();
        assert!(n >= 1, "{kind:?} has no corpus line");
    }
}

#[test]
fn scrubbing_is_idempotent() {
    let s = Scrubber::new();
    for line in MUST_SCRUB
        .iter()
        .map(|c| c.0)
        .chain(NEAR_MISSES.iter().copied())
    {
        let once = s.scrub(line);
        let twice = s.scrub(&once.text);
        assert_eq!(twice.text, once.text, "{line:?}");
        assert!(twice.found.is_empty(), "{line:?}: {:?}", twice.found);
    }
}

#[test]
fn a_log_excerpt_with_everything() {
    let log = "\
2024-01-15T10:30:00Z INFO user jane@example.com logged in from 203.0.113.9 (build 1.2.3)
2024-01-15T10:30:01Z DEBUG headers={\"Authorization\": \"Bearer abc.def.ghi-123\"}
2024-01-15T10:30:02Z WARN payment 4111 1111 1111 1111 declined, retry at +1 555 123 4567
2024-01-15T10:30:03Z INFO order 12345678 total $1,234.56 took 1700000000 ms";
    let out = Scrubber::new().scrub(log);
    let expected = "\
2024-01-15T10:30:00Z INFO user [EMAIL] logged in from [IP] (build 1.2.3)
2024-01-15T10:30:01Z DEBUG headers={\"Authorization\": \"Bearer [BEARER_TOKEN]\"}
2024-01-15T10:30:02Z WARN payment [CARD] declined, retry at [PHONE]
2024-01-15T10:30:03Z INFO order 12345678 total $1,234.56 took 1700000000 ms";
    assert_eq!(out.text, expected);
    assert_eq!(out.found.values().sum::<u32>(), 5);
}

/// Throughput on clean text. Run with
/// `cargo test --release -p agentrl-core --test pii_corpus -- --ignored --nocapture`.
#[test]
#[ignore = "timing; meaningful only in release builds"]
fn clean_text_throughput() {
    const WORDS: &[&str] = &[
        "the",
        "agent",
        "calls",
        "a",
        "tool",
        "and",
        "reads",
        "its",
        "result",
        "before",
        "it",
        "answers;",
        "version",
        "1.2.3",
        "at",
        "10:30:00",
        "on",
        "2024-01-15",
        "costs",
        "$12.50",
        "with",
        "3",
        "retries,",
        "see",
        "`fn",
        "main()`",
        "in",
        "src/lib.rs",
        "token",
        "count",
        "is",
        "4096.",
        "Écoute",
        "naïve",
        "données",
        "for",
        "user",
        "requests",
        "(p95",
        "120ms)",
    ];
    let mut text = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while text.len() < 16 << 20 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        text.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
        text.push(if (x >> 20).is_multiple_of(17) {
            '\n'
        } else {
            ' '
        });
    }
    let s = Scrubber::new();
    assert!(s.scrub(&text).found.is_empty(), "the corpus must be clean");
    let rounds = 5;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(s.scrub(std::hint::black_box(&text)));
    }
    let secs = start.elapsed().as_secs_f64();
    let mb_per_s = (rounds * text.len()) as f64 / secs / 1e6;
    println!("scrub throughput on clean text: {mb_per_s:.0} MB/s");
    if !cfg!(debug_assertions) {
        assert!(mb_per_s > 50.0, "{mb_per_s:.0} MB/s");
    }
}
