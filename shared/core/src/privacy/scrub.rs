//! PII and secret scrubbing: every detected span is replaced by a typed placeholder.
//!
//! Detectors, from highest to lowest priority, and what each deliberately lets through.
//! Overlapping detections merge into one placeholder of the highest-priority kind among them
//! (`token = "Bearer abc…"` becomes `token = "[BEARER_TOKEN]"`), so no part of a secret
//! survives next to a more specific match.
//!
//! - `[PRIVATE_KEY]`: a PEM `-----BEGIN … PRIVATE KEY-----` block up to its `-----END …-----`
//!   line; a truncated block (no END) up to the last base64 or header line.
//! - `[JWT]`: `eyJ` + base64url, a dot, ≥ 8 base64url, a dot, an optional signature.
//! - `[AWS_ACCESS_KEY]`: `AKIA`/`ASIA` + 16 `[A-Z0-9]`, as a whole word.
//! - `[API_KEY]`: `sk-…` (≥ 20 more characters and at least one digit, so `sk-some-long-slug`
//!   survives), `sk_live_`/`sk_test_`/`rk_live_`/`rk_test_`, `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`
//!   (≥ 30), `github_pat_`, `xoxa-`/`xoxb-`/`xoxp-`/`xoxr-`/`xoxs-`, `AIza` + 35, `glpat-`.
//! - `[BEARER_TOKEN]`: the token after `Authorization: Bearer` (any length), or after a bare
//!   `Bearer` when it is ≥ 16 characters with a letter and a digit ("the bearer of bad news"
//!   survives). `Authorization: Basic …` / `Authorization: token …` credentials become
//!   `[SECRET]`.
//! - `[SECRET]`: the 40-character value of `aws_secret_access_key`; the password of a
//!   `scheme://user:password@host` URL; and the *value* of
//!   assignments to keys ending in `password`, `passwd`, `passphrase`, `secret`, `token`,
//!   `api_key`/`apikey`, `secret_key`, `private_key`, `access_key`, `client_secret`,
//!   `access_token`, … (any prefix: `DB_PASSWORD`, `clientSecret`), separated by `=`, `:`,
//!   `:=` or `=>`. Quoted values are replaced unless empty, `<…>` (template tokens such as
//!   `"eos_token": "</s>"`), `${…}`/`{{…}}`/`%(…` references, a placeholder, or
//!   `null`/`none`/`nil`/`true`/`false`/`undefined`. Unquoted values are replaced only when
//!   ≥ 6 characters with a letter and a digit and not followed by `(`, `[` or `{` — so code such
//!   as `token = tokens.next()` or `max_tokens: 4096` survives, and so does `Password: hunter`.
//! - `[EMAIL]`: `local@domain.tld` with an alphabetic TLD; `icon@2x.png`-style asset names and
//!   `user@localhost` survive.
//! - `[CARD]`: 13–19 digits, either contiguous or in groups split by one consistent separator
//!   (space or dash; first group of 4, later groups of 3–6), starting with 2–6 (the
//!   Visa/Mastercard/Amex/Discover/JCB/UnionPay ranges) and passing Luhn. A Luhn-failing number
//!   survives, and so does an ISBN (`978-…` starts with 9).
//! - `[IP]`: IPv4 with four decimal octets ≤ 255 and no leading zeros, not part of a longer
//!   dotted number (`1.2.3.4.5`), not glued to a `v` (`v1.2.3.4`) and not right after the word
//!   `version`, `ver`, `v`, `release`, `build`, `rev`, `revision` or `firmware`
//!   (`version 10.0.0.1` survives: four-part version numbers are common, and such an address
//!   is not a network location). IPv6 in full or `::`-compressed form (and IPv4-mapped), with
//!   at least two non-empty groups, parsed by the standard library; `10:30:00`, MAC addresses,
//!   `std::io` and a lone `::1` survive.
//! - `[PHONE]`: `+` and 8–15 digits with optional single space/dot/dash separators and
//!   parenthesised groups (`+44 20 7946 0958`, `+1 (555) 123-4567`, `+14155552671`); North
//!   American `(555) 123-4567` and `555-123-4567` / `555.123.4567` / `555 123 4567` (one
//!   consistent separator); trunk-prefixed national numbers: 10–11 digits starting with 0, as a
//!   prefix group then either one group of 5–8 digits or two to four groups of 2–4, with one
//!   consistent separator (`020 7946 0958`, `07700 900123`, `01 23 45 67 89`). Digit runs
//!   without separators (order ids, epoch seconds), dates and ZIP+4 codes survive.
//!
//! Placeholders are never detected themselves and a value already holding one is left alone,
//! so re-scrubbing scrubbed text changes nothing on ordinary text (tested on the corpus). Blind
//! spot: a candidate starting inside another candidate of the same detector is only found by a
//! second pass; that takes run-together input such as `+141111111+1111(555)1111`, and for
//! assignments a rejected value is searched again to narrow it further.

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use regex::{Captures, Match, Regex, RegexSet};
use serde::{Deserialize, Serialize};

/// What kind of sensitive data a span held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    /// An email address.
    Email,
    /// A phone number.
    Phone,
    /// A payment card number (Luhn-valid).
    Card,
    /// An IPv4 or IPv6 address.
    Ip,
    /// An AWS access key id.
    AwsAccessKey,
    /// A password, secret key or credential value.
    Secret,
    /// An HTTP bearer token.
    BearerToken,
    /// A PEM private key block.
    PrivateKey,
    /// A vendor API key (OpenAI, Stripe, GitHub, Slack, Google, GitLab).
    ApiKey,
    /// A JSON Web Token.
    Jwt,
}

impl PiiKind {
    /// Every kind.
    pub const ALL: [Self; 10] = [
        Self::Email,
        Self::Phone,
        Self::Card,
        Self::Ip,
        Self::AwsAccessKey,
        Self::Secret,
        Self::BearerToken,
        Self::PrivateKey,
        Self::ApiKey,
        Self::Jwt,
    ];

    /// The text that replaces a span of this kind.
    pub fn placeholder(self) -> &'static str {
        match self {
            Self::Email => "[EMAIL]",
            Self::Phone => "[PHONE]",
            Self::Card => "[CARD]",
            Self::Ip => "[IP]",
            Self::AwsAccessKey => "[AWS_ACCESS_KEY]",
            Self::Secret => "[SECRET]",
            Self::BearerToken => "[BEARER_TOKEN]",
            Self::PrivateKey => "[PRIVATE_KEY]",
            Self::ApiKey => "[API_KEY]",
            Self::Jwt => "[JWT]",
        }
    }

    /// Credentials rather than personal data: what the safety reward looks for.
    pub fn is_credential(self) -> bool {
        !matches!(self, Self::Email | Self::Phone | Self::Card | Self::Ip)
    }

    fn priority(self) -> u8 {
        match self {
            Self::PrivateKey => 9,
            Self::Jwt => 8,
            Self::AwsAccessKey => 7,
            Self::ApiKey => 6,
            Self::BearerToken => 5,
            Self::Secret => 4,
            Self::Email => 3,
            Self::Card => 2,
            Self::Ip => 1,
            Self::Phone => 0,
        }
    }
}

/// Scrubbed text and how many spans of each kind were replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scrubbed {
    /// The text with every detected span replaced by its placeholder.
    pub text: String,
    /// Replacements per kind; empty when the text was clean.
    pub found: BTreeMap<PiiKind, u32>,
}

/// The compiled detectors; build once and share (it is `Sync`).
#[derive(Debug, Clone)]
pub struct Scrubber {
    /// One pass over the text says which detectors can match at all; on clean text that is
    /// one DFA scan instead of one per detector.
    gate: RegexSet,
    /// Index-aligned with [`DETECTORS`].
    regexes: Vec<Regex>,
    private_key_end: Regex,
    private_key_tail: Regex,
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Clone, Copy)]
struct Hit {
    start: usize,
    end: usize,
    kind: PiiKind,
}

// `(?-u:\b)` is an ASCII word boundary: Unicode boundaries would force the slow engines on
// non-ASCII text, and every token delimited here is ASCII.
const PRIVATE_KEY: &str = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";
const PRIVATE_KEY_END: &str = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";
/// Base64 and `Header: value` lines after an unterminated BEGIN line (also JSON-escaped).
const PRIVATE_KEY_TAIL: &str =
    r"\A(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+: ?[^\r\n\\]*))*";
const JWT: &str = r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*";
const AWS_KEY: &str = r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)";
const AWS_SECRET: &str = r#"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)["']?\s*(?:=>|:=|=|:)\s*["']?([A-Za-z0-9/+]{40})"#;
const URL_CREDENTIALS: &str = r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:([^\s/@]+)@";
const API_KEY: &str = r"(?-u:\b)(?:sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,})";
const AUTH: &str = r#"(?i)(?:(authorization["']?\s*[:=]\s*["']?\s*)(bearer|basic|token)|(?-u:\b)(bearer))[ \t]+([A-Za-z0-9._~+/-]+=*)"#;
const ASSIGNMENT: &str = r#"(?i)(?-u:\b)[a-z0-9_.-]*?(?:api[_-]?key|api[_-]?secret|api[_-]?token|secret[_-]?key|private[_-]?key|access[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|id[_-]?token|secret|token|passwd|password|passphrase)["']?[ \t]*(?:=>|:=|=|:)[ \t]*(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'`,;&<>()\[\]{}]+))"#;
const EMAIL: &str = r"(?-u:\b)[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?-u:\b)";
const CARD: &str = r"(?-u:\b)[0-9]{4}(?:[ -]?[0-9]{3,6}){1,4}(?-u:\b)";
const IPV4: &str = r"(?-u:\b)(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?-u:\b)";
const IPV6: &str = r"(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6}::(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?|::[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})(?:(?:\.[0-9]{1,3}){3})?(?:%[0-9A-Za-z]{1,16})?";
const PHONE_INTL: &str = r"\+[0-9]{1,3}(?:[ .-]?(?:\([0-9]{1,5}\)|[0-9]{1,5})){1,7}";
const PHONE_NANP: &str = r"(?:(?-u:\b)1[ .-])?(?:\([0-9]{3}\)[ .-]?|(?-u:\b)[0-9]{3}([ .-]))[0-9]{3}([ .-])[0-9]{4}(?-u:\b)";
const PHONE_TRUNK: &str = r"(?-u:\b)0[0-9]{1,4}(?:[ -][0-9]{5,8}|(?:[ -][0-9]{2,4}){2,4})(?-u:\b)";

#[derive(Debug, Clone, Copy)]
enum Detector {
    PrivateKey,
    Jwt,
    AwsKey,
    AwsSecret,
    UrlCredentials,
    ApiKey,
    Auth,
    Assignment,
    Email,
    Ipv4,
    Ipv6,
    PhoneIntl,
    PhoneNanp,
    PhoneTrunk,
    Card,
}

const DETECTORS: [(Detector, &str); 15] = [
    (Detector::PrivateKey, PRIVATE_KEY),
    (Detector::Jwt, JWT),
    (Detector::AwsKey, AWS_KEY),
    (Detector::AwsSecret, AWS_SECRET),
    (Detector::UrlCredentials, URL_CREDENTIALS),
    (Detector::ApiKey, API_KEY),
    (Detector::Auth, AUTH),
    (Detector::Assignment, ASSIGNMENT),
    (Detector::Email, EMAIL),
    (Detector::Ipv4, IPV4),
    (Detector::Ipv6, IPV6),
    (Detector::PhoneIntl, PHONE_INTL),
    (Detector::PhoneNanp, PHONE_NANP),
    (Detector::PhoneTrunk, PHONE_TRUNK),
    (Detector::Card, CARD),
];

/// Longest rejected assignment value searched again for a key inside it.
const REJECTED_VALUE_RESCAN: usize = 256;

/// Words after which a dotted quad is a version number, not an address.
const VERSION_WORDS: [&str; 8] = [
    "version", "ver", "v", "release", "build", "rev", "revision", "firmware",
];

impl Scrubber {
    /// Compiles the detectors (a few milliseconds: do it once per process).
    pub fn new() -> Self {
        // The patterns are constants covered by the tests: failing here is a build defect.
        let gate = RegexSet::new(DETECTORS.iter().map(|d| d.1))
            .expect("built-in scrubber patterns compile");
        let regexes = DETECTORS
            .iter()
            .map(|d| Regex::new(d.1).expect("built-in scrubber pattern compiles"))
            .collect();
        Self {
            gate,
            regexes,
            private_key_end: Regex::new(PRIVATE_KEY_END)
                .expect("built-in scrubber pattern compiles"),
            private_key_tail: Regex::new(PRIVATE_KEY_TAIL)
                .expect("built-in scrubber pattern compiles"),
        }
    }

    /// Replaces every detected span with its kind's placeholder.
    pub fn scrub(&self, text: &str) -> Scrubbed {
        let hits = resolve(self.candidates(text));
        let mut found = BTreeMap::new();
        if hits.is_empty() {
            return Scrubbed {
                text: text.to_owned(),
                found,
            };
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for h in hits {
            out.push_str(&text[at..h.start]);
            out.push_str(h.kind.placeholder());
            *found.entry(h.kind).or_insert(0u32) += 1;
            at = h.end;
        }
        out.push_str(&text[at..]);
        Scrubbed { text: out, found }
    }

    fn candidates(&self, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        for i in &self.gate.matches(text) {
            let (Some((detector, _)), Some(re)) = (DETECTORS.get(i), self.regexes.get(i)) else {
                continue;
            };
            self.detect(*detector, re, text, &mut hits);
        }
        hits
    }

    fn detect(&self, detector: Detector, re: &Regex, text: &str, hits: &mut Vec<Hit>) {
        let mut push = |start, end, kind| hits.push(Hit { start, end, kind });
        let mut push_match = |m: Match<'_>, kind| push(m.start(), m.end(), kind);
        match detector {
            Detector::PrivateKey => self.private_keys(re, text, hits),
            Detector::Jwt => re.find_iter(text).for_each(|m| push_match(m, PiiKind::Jwt)),
            Detector::AwsKey => re
                .find_iter(text)
                .for_each(|m| push_match(m, PiiKind::AwsAccessKey)),
            Detector::ApiKey => {
                for m in re.find_iter(text) {
                    let s = m.as_str();
                    if !s.starts_with("sk-") || s.bytes().any(|b| b.is_ascii_digit()) {
                        push_match(m, PiiKind::ApiKey);
                    }
                }
            }
            Detector::Auth => {
                for c in re.captures_iter(text) {
                    if let Some((m, kind)) = auth_token(&c) {
                        push_match(m, kind);
                    }
                }
            }
            Detector::AwsSecret => {
                for c in re.captures_iter(text) {
                    if let Some(m) = c.get(1)
                        && !next_char(text, m.end())
                            .is_some_and(|ch| ch.is_ascii_alphanumeric() || "/+=".contains(ch))
                    {
                        push_match(m, PiiKind::Secret);
                    }
                }
            }
            Detector::UrlCredentials => {
                for c in re.captures_iter(text) {
                    if let Some(m) = c.get(1)
                        && !holds_placeholder(m.as_str())
                    {
                        push_match(m, PiiKind::Secret);
                    }
                }
            }
            Detector::Assignment => {
                let mut at = 0;
                while let Some(c) = re.captures_at(text, at) {
                    let Some(whole) = c.get(0) else { break };
                    if let Some(m) = assigned_secret(text, &c) {
                        push_match(m, PiiKind::Secret);
                        at = whole.end();
                        continue;
                    }
                    // A rejected value may hold the next key (`password=token: abc123`), so
                    // search again from the value; capped so that long values stay linear.
                    let value = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3));
                    at = match value {
                        Some(v) if whole.end() - v.start() <= REJECTED_VALUE_RESCAN => v.start(),
                        _ => whole.end(),
                    };
                }
            }
            Detector::Email => {
                for m in re.find_iter(text) {
                    if !is_asset_name(m.as_str()) {
                        push_match(m, PiiKind::Email);
                    }
                }
            }
            Detector::Ipv4 => {
                for m in re.find_iter(text) {
                    if is_ipv4(text, m) {
                        push_match(m, PiiKind::Ip);
                    }
                }
            }
            Detector::Ipv6 => {
                for m in re.find_iter(text) {
                    if is_ipv6(text, m) {
                        push_match(m, PiiKind::Ip);
                    }
                }
            }
            Detector::PhoneIntl => {
                for m in re.find_iter(text) {
                    if let Some(end) = intl_phone_end(text, m) {
                        push(m.start(), end, PiiKind::Phone);
                    }
                }
            }
            Detector::PhoneNanp => {
                for c in re.captures_iter(text) {
                    if let Some(m) = c.get(0)
                        && is_nanp_phone(text, &c, m)
                    {
                        push_match(m, PiiKind::Phone);
                    }
                }
            }
            Detector::PhoneTrunk => {
                for m in re.find_iter(text) {
                    if is_trunk_phone(text, m) {
                        push_match(m, PiiKind::Phone);
                    }
                }
            }
            Detector::Card => {
                for m in re.find_iter(text) {
                    if let Some((start, end)) = card_span(m) {
                        push(start, end, PiiKind::Card);
                    }
                }
            }
        }
    }

    /// Whole PEM blocks. The END line is searched separately rather than with a lazy
    /// `[\s\S]*?`, which would rescan the rest of the text for every unterminated BEGIN.
    fn private_keys(&self, begin: &Regex, text: &str, hits: &mut Vec<Hit>) {
        let mut covered = 0;
        let mut end_exists = true;
        for m in begin.find_iter(text) {
            if m.start() < covered {
                continue;
            }
            let end = match end_exists
                .then(|| self.private_key_end.find_at(text, m.end()))
                .flatten()
            {
                Some(e) => e.end(),
                None => {
                    end_exists = false;
                    m.end()
                        + self
                            .private_key_tail
                            .find(&text[m.end()..])
                            .map_or(0, |t| t.end())
                }
            };
            hits.push(Hit {
                start: m.start(),
                end,
                kind: PiiKind::PrivateKey,
            });
            covered = end;
        }
    }
}

/// Overlapping detections merge into one span labelled with the highest-priority kind among
/// them: a secret value that also holds an API key is replaced whole, never half.
fn resolve(mut candidates: Vec<Hit>) -> Vec<Hit> {
    candidates.sort_by_key(|h| h.start);
    let mut merged: Vec<Hit> = Vec::with_capacity(candidates.len());
    for h in candidates.into_iter().filter(|h| h.start < h.end) {
        match merged.last_mut() {
            Some(last) if h.start < last.end => {
                last.end = last.end.max(h.end);
                if h.kind.priority() > last.kind.priority() {
                    last.kind = h.kind;
                }
            }
            _ => merged.push(h),
        }
    }
    merged
}

fn prev_char(text: &str, i: usize) -> Option<char> {
    text.get(..i).and_then(|s| s.chars().next_back())
}

fn next_char(text: &str, i: usize) -> Option<char> {
    text.get(i..).and_then(|s| s.chars().next())
}

/// True when `text[i..]` starts with `sep` followed by a digit: the span continues a number.
fn continues_number(text: &str, i: usize, seps: &str) -> bool {
    let mut rest = text.get(i..).unwrap_or("").chars();
    matches!((rest.next(), rest.next()), (Some(s), Some(d)) if seps.contains(s) && d.is_ascii_digit())
}

fn is_placeholder(v: &str) -> bool {
    PiiKind::ALL.iter().any(|k| k.placeholder() == v)
}

/// Already scrubbed: what surrounds a placeholder was not sensitive on the first pass.
fn holds_placeholder(v: &str) -> bool {
    v.contains('[') && PiiKind::ALL.iter().any(|k| v.contains(k.placeholder()))
}

fn auth_token<'t>(c: &Captures<'t>) -> Option<(Match<'t>, PiiKind)> {
    let token = c.get(4)?;
    if is_placeholder(token.as_str()) {
        return None;
    }
    if let Some(scheme) = c.get(2) {
        let kind = if scheme.as_str().eq_ignore_ascii_case("bearer") {
            PiiKind::BearerToken
        } else {
            PiiKind::Secret
        };
        return Some((token, kind));
    }
    let t = token.as_str();
    let looks_random = t.len() >= 16
        && t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes().any(|b| b.is_ascii_alphabetic());
    looks_random.then_some((token, PiiKind::BearerToken))
}

fn assigned_secret<'t>(text: &str, c: &Captures<'t>) -> Option<Match<'t>> {
    if let Some(v) = c.get(1).or_else(|| c.get(2)) {
        let s = v.as_str().trim();
        let lower = s.to_ascii_lowercase();
        let benign = s.is_empty()
            || (s.starts_with('<') && s.ends_with('>'))
            || s.starts_with("${")
            || s.starts_with("{{")
            || s.starts_with("%(")
            || holds_placeholder(s)
            || ["null", "none", "nil", "true", "false", "undefined"].contains(&lower.as_str());
        return (!benign).then_some(v);
    }
    let v = c.get(3)?;
    let s = v.as_str();
    let secret_like = !holds_placeholder(s)
        && s.chars().count() >= 6
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.chars().any(char::is_alphabetic)
        && !next_char(text, v.end()).is_some_and(|ch| "([{".contains(ch));
    secret_like.then_some(v)
}

fn is_asset_name(email: &str) -> bool {
    // `icon@2x.png`: the "domain" of a density-suffixed asset starts with digits and an `x`.
    email.split_once('@').is_some_and(|(_, domain)| {
        let digits = domain.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && domain.as_bytes().get(digits) == Some(&b'x')
    })
}

fn is_ipv4(text: &str, m: Match<'_>) -> bool {
    let octets_ok = m
        .as_str()
        .split('.')
        .all(|o| o.parse::<u16>().is_ok_and(|n| n <= 255) && (o == "0" || !o.starts_with('0')));
    if !octets_ok || prev_char(text, m.start()) == Some('.') || continues_number(text, m.end(), ".")
    {
        return false;
    }
    let before = text[..m.start()].trim_end_matches([' ', '\t', ':', '=']);
    let word_start = before
        .rfind(|c: char| !c.is_ascii_alphabetic())
        .map_or(0, |i| i + 1);
    let word = &before[word_start..];
    !VERSION_WORDS.iter().any(|v| v.eq_ignore_ascii_case(word))
}

fn is_ipv6(text: &str, m: Match<'_>) -> bool {
    let s = m.as_str();
    let glued =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if glued(prev_char(text, m.start())) || glued(next_char(text, m.end())) {
        return false;
    }
    let addr = s.split('%').next().unwrap_or(s);
    let groups = addr.split(':').filter(|g| !g.is_empty()).count();
    groups >= 2 && addr.parse::<Ipv6Addr>().is_ok()
}

fn intl_phone_end(text: &str, m: Match<'_>) -> Option<usize> {
    if prev_char(text, m.start()).is_some_and(|c| c.is_ascii_alphanumeric() || c == '+') {
        return None;
    }
    let s = m.as_str();
    // Greedy matching can swallow a trailing number ("… 4567 2024"): drop trailing groups until
    // the digit count fits E.164.
    let mut end = s.len();
    loop {
        let digits = s[..end].bytes().filter(u8::is_ascii_digit).count();
        if digits <= 15 {
            let boundary_ok = !next_char(text, m.start() + end)
                .is_some_and(|c| c.is_ascii_alphanumeric())
                && !continues_number(text, m.start() + end, ".,");
            return (digits >= 8 && boundary_ok).then_some(m.start() + end);
        }
        end = s[..end].rfind([' ', '.', '-', '('])?;
        end = s[..end].trim_end_matches([' ', '.', '-']).len();
    }
}

fn phone_context_ok(text: &str, start: usize, end: usize) -> bool {
    !prev_char(text, start).is_some_and(|c| c.is_ascii_alphanumeric() || "+-./_".contains(c))
        && !continues_number(text, end, ".-/")
}

fn is_nanp_phone(text: &str, c: &Captures<'_>, m: Match<'_>) -> bool {
    let consistent = match (c.get(1), c.get(2)) {
        (Some(a), Some(b)) => a.as_str() == b.as_str(),
        _ => true,
    };
    consistent && phone_context_ok(text, m.start(), m.end())
}

fn is_trunk_phone(text: &str, m: Match<'_>) -> bool {
    let s = m.as_str();
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    let mut seps = s.bytes().filter(|b| !b.is_ascii_digit());
    let first = seps.next();
    (10..=11).contains(&digits)
        && seps.all(|b| Some(b) == first)
        && phone_context_ok(text, m.start(), m.end())
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d - b'0');
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn card_digits_ok(digits: &[u8]) -> bool {
    (13..=19).contains(&digits.len()) && (b'2'..=b'6').contains(&digits[0]) && luhn(digits)
}

/// The longest card number inside a candidate: its digit groups may include neighbours (a
/// year before, a count after), so every run of consecutive groups is tried.
fn card_span(m: Match<'_>) -> Option<(usize, usize)> {
    let s = m.as_str().as_bytes();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        groups.push((start, i));
        i += 1;
    }
    if groups.len() == 1 {
        return card_digits_ok(s).then_some((m.start(), m.end()));
    }
    let mut best: Option<(usize, usize)> = None;
    for a in 0..groups.len() {
        let mut digits: Vec<u8> = Vec::with_capacity(19);
        for b in a..groups.len() {
            let (gs, ge) = groups[b];
            let len = ge - gs;
            let shape_ok = if b == a {
                len == 4
            } else {
                (3..=6).contains(&len) && s[gs - 1] == s[groups[a + 1].0 - 1]
            };
            if !shape_ok {
                break;
            }
            digits.extend_from_slice(&s[gs..ge]);
            if b > a && card_digits_ok(&digits) {
                let span = (groups[a].0, ge);
                if best.is_none_or(|(bs, be)| ge - groups[a].0 > be - bs) {
                    best = Some(span);
                }
            }
        }
    }
    best.map(|(a, b)| (m.start() + a, m.start() + b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::LazyLock;

    static SCRUBBER: LazyLock<Scrubber> = LazyLock::new(Scrubber::new);

    fn scrub(s: &str) -> String {
        SCRUBBER.scrub(s).text
    }

    /// A Luhn-valid number of `len` digits starting with `first`, from `body` digits.
    fn luhn_number(first: u8, body: &[u8], len: usize) -> String {
        let mut digits: Vec<u8> = std::iter::once(first)
            .chain(body.iter().copied())
            .take(len - 1)
            .collect();
        let check = (0..10u8)
            .find(|c| {
                let mut d = digits.clone();
                d.push(*c);
                luhn(&d.iter().map(|x| x + b'0').collect::<Vec<_>>())
            })
            .unwrap_or(0);
        digits.push(check);
        digits.iter().map(|d| char::from(d + b'0')).collect()
    }

    fn grouped(number: &str, sizes: &[usize], sep: &str) -> String {
        let mut out = Vec::new();
        let mut at = 0;
        for &n in sizes {
            out.push(&number[at..at + n]);
            at += n;
        }
        out.join(sep)
    }

    fn prose_token() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z]{1,10}",
            1 => "[A-Z][a-z]{1,8}",
            1 => (0u32..100).prop_map(|n| n.to_string()),
            1 => (0u32..100, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
            1 => (0u32..20, 0u32..20, 0u32..100).prop_map(|(a, b, c)| format!("{a}.{b}.{c}")),
            1 => (0u32..24, 0u32..60, 0u32..60).prop_map(|(h, m, s)| format!("{h:02}:{m:02}:{s:02}")),
            1 => (1990u32..2040, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y}-{m:02}-{d:02}")),
            1 => (1_000_000_000u64..2_000_000_000).prop_map(|n| n.to_string()),
            1 => prop::sample::select(vec!["héllo", "日本語", "naïve", "—", "(see above)", "e.g.", "100%"])
                .prop_map(str::to_owned),
        ]
    }

    proptest! {
        #[test]
        fn luhn_valid_cards_are_always_scrubbed(
            first in 2u8..=6,
            body in proptest::collection::vec(0u8..10, 18),
            shape in 0usize..6,
            sep in prop_oneof![Just(" "), Just("-"), Just("")],
            before in "[a-z ]{0,12}",
            after in "[a-z ]{0,12}",
        ) {
            let (len, sizes): (usize, &[usize]) = match shape {
                0 => (16, &[4, 4, 4, 4]),
                1 => (15, &[4, 6, 5]),
                2 => (19, &[4, 4, 4, 4, 3]),
                3 => (14, &[4, 6, 4]),
                4 => (13, &[13]),
                _ => (17, &[17]),
            };
            let card = grouped(&luhn_number(first, &body, len), sizes, sep);
            let line = format!("{before} {card} {after}");
            let out = SCRUBBER.scrub(&line);
            prop_assert!(!out.text.contains(&card), "{line:?} -> {:?}", out.text);
            prop_assert_eq!(out.found.get(&PiiKind::Card), Some(&1), "{:?} -> {:?}", line, out.text);
        }

        #[test]
        fn arbitrary_fragments_never_panic(
            parts in proptest::collection::vec(prop::sample::select(vec![
                "4111", "1111", " ", "-", ".", ":", "::", "@", "+1", "+", "(555)", "0", "00", "255",
                "ffff", "Bearer ", "Authorization: ", "password=", "token: ", "\"", "'", "eyJ", "é",
                "日", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "\\n",
                "\n", "AKIA", "sk-", "x", "a.b", "[IP]", "v", "version ", "%eth0", "2x.png",
            ]), 0..60),
        ) {
            let text: String = parts.concat();
            let once = SCRUBBER.scrub(&text);
            let placeholders: usize = PiiKind::ALL
                .iter()
                .map(|k| once.text.matches(k.placeholder()).count())
                .sum();
            prop_assert!(placeholders >= once.found.values().map(|n| *n as usize).sum::<usize>());
            let _ = SCRUBBER.scrub(&once.text);
        }

        #[test]
        fn prose_without_pii_is_unchanged(
            tokens in proptest::collection::vec(prose_token(), 0..40),
            seps in proptest::collection::vec(prop_oneof![Just(" "), Just(", "), Just(". "), Just("\n")], 40),
        ) {
            let mut text = String::new();
            for (t, s) in tokens.iter().zip(&seps) {
                text.push_str(t);
                text.push_str(s);
            }
            let out = SCRUBBER.scrub(&text);
            prop_assert_eq!(&out.text, &text);
            prop_assert!(out.found.is_empty());
        }
    }

    #[test]
    fn luhn_known_values() {
        assert!(luhn(b"4111111111111111"));
        assert!(luhn(b"79927398713"));
        assert!(!luhn(b"4111111111111112"));
    }

    #[test]
    fn overlaps_merge_into_the_highest_priority_kind() {
        let s = Scrubber::new();
        let out = s.scrub("Authorization: Bearer eyJhbGciOiJI.eyJzdWIiOiIx.sig_abc");
        assert_eq!(out.text, "Authorization: Bearer [JWT]");
        assert_eq!(out.found.get(&PiiKind::Jwt), Some(&1));
        assert_eq!(out.found.get(&PiiKind::BearerToken), None);
        assert_eq!(
            scrub("api_key = \"sk_live_4eC39HqLyjWDarjtT1zdp7dc\""),
            "api_key = \"[API_KEY]\""
        );
        assert_eq!(scrub("::ffff:192.0.2.1 is mapped"), "[IP] is mapped");
        assert_eq!(
            scrub("api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc tail-part'"),
            "api_key = '[API_KEY]'"
        );
        assert_eq!(
            scrub("token = \"Bearer abc123def456ghi789xyz\""),
            "token = \"[BEARER_TOKEN]\""
        );
    }

    #[test]
    fn rescrubbing_finds_nothing_new() {
        // Found by the fragment property test before overlaps merged and values holding a
        // placeholder were skipped.
        for text in [
            "password='-----BEGIN RSA PRIVATE KEY------'",
            "Bearer 4111-2x.pngpassword=token: 4111ffff",
            "token = \"Bearer abc123def456ghi789xyz\" tail",
        ] {
            let once = scrub(text);
            assert_eq!(scrub(&once), once, "{text:?}");
        }
    }

    #[test]
    fn card_inside_neighbouring_numbers() {
        assert_eq!(scrub("2024 4111 1111 1111 1111 paid"), "2024 [CARD] paid");
        assert_eq!(scrub("4111-1111-1111-1111 12"), "[CARD] 12");
        assert_eq!(scrub("4111 1111-1111 1111"), "4111 1111-1111 1111");
    }

    #[test]
    fn pem_blocks_terminated_truncated_and_repeated() {
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBz\n-----END EC PRIVATE KEY-----";
        assert_eq!(
            scrub(&format!("a {key} b {key} c")),
            "a [PRIVATE_KEY] b [PRIVATE_KEY] c"
        );
        assert_eq!(
            scrub(
                "x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\nProc-Type: 4,ENCRYPTED\n\nthen prose"
            ),
            "x [PRIVATE_KEY]\n\nthen prose"
        );
        // Unterminated headers must not each rescan the rest of the text.
        let many = "-----BEGIN PRIVATE KEY----- ".repeat(2_000);
        let out = SCRUBBER.scrub(&many);
        assert_eq!(out.found.get(&PiiKind::PrivateKey), Some(&2_000));
        assert_eq!(
            scrub("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZI\n"),
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZI\n"
        );
    }

    #[test]
    fn counts_every_replacement() {
        let out = Scrubber::new().scrub("a@example.com, b@example.org and 10.0.0.1");
        assert_eq!(out.text, "[EMAIL], [EMAIL] and [IP]");
        assert_eq!(out.found.get(&PiiKind::Email), Some(&2));
        assert_eq!(out.found.get(&PiiKind::Ip), Some(&1));
    }

    #[test]
    fn placeholders_serialise_snake_case() {
        assert_eq!(
            serde_json::to_string(&PiiKind::AwsAccessKey).unwrap(),
            "\"aws_access_key\""
        );
        for k in PiiKind::ALL {
            assert_eq!(scrub(k.placeholder()), k.placeholder());
        }
    }

    #[test]
    fn assignment_values_only() {
        assert_eq!(
            scrub("password=hunter22 user=bob"),
            "password=[SECRET] user=bob"
        );
        assert_eq!(
            scrub(r#"{"clientSecret": "abc"}"#),
            r#"{"clientSecret": "[SECRET]"}"#
        );
        assert_eq!(scrub("token = tokens.next()"), "token = tokens.next()");
        assert_eq!(scrub("secret = derive2(seed)"), "secret = derive2(seed)");
        assert_eq!(scrub(r#""pad_token": "<pad>""#), r#""pad_token": "<pad>""#);
    }
}
