//! Query-string helpers every listing shares: page sizes, time windows, cursors in links.

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::ApiError;

/// Page size of listings when the query gives none.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest page size of listings.
pub const MAX_LIMIT: usize = 1_000;

/// A non-negative integer query parameter, 400 naming it when malformed.
///
/// # Errors
/// 400 naming `field` when `value` is not a non-negative integer.
pub fn parse_u64(field: &str, value: Option<&str>) -> Result<Option<u64>, ApiError> {
    // The document declares these as int64: the same bound here, so what it calls invalid
    // is refused.
    value
        .map(|v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| i64::try_from(*n).is_ok())
                .ok_or_else(|| ApiError::invalid(field, "must be an integer from 0 to 2^63 − 1"))
        })
        .transpose()
}

/// The half-open window `[from, to)` of epoch milliseconds, with defaults. A `to` before
/// `from` is the empty window at `from`, as a range query reads it, not an error: each bound
/// is valid alone, and a client that moves one of them past the other asks for nothing.
///
/// # Errors
/// 400 naming `from` or `to` when malformed.
pub fn window(
    from: Option<&str>,
    to: Option<&str>,
    default_from: u64,
) -> Result<(u64, u64), ApiError> {
    let from = parse_u64("from", from)?.unwrap_or(default_from);
    let to = parse_u64("to", to)?.unwrap_or(u64::MAX);
    Ok((from, to.max(from)))
}

/// The end of a [`window`] as an answer shows it: `None` (JSON `null`) for an open one, whose
/// `u64::MAX` is past the integers JSON readers hold exactly (2^53, or 2^63 − 1).
#[must_use]
pub fn shown_end(to: u64) -> Option<u64> {
    (to != u64::MAX).then_some(to)
}

/// A count the query may set: `default` when absent, within `range` otherwise.
///
/// # Errors
/// 400 naming `field` when out of range or malformed.
pub fn bounded(
    field: &str,
    value: Option<&str>,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, ApiError> {
    match parse_u64(field, value)? {
        None => Ok(default),
        Some(n) if usize::try_from(n).is_ok_and(|n| range.contains(&n)) => Ok(n as usize),
        Some(_) => Err(ApiError::invalid(
            field,
            format!("must be between {} and {}", range.start(), range.end()),
        )),
    }
}

/// A page size: `default` when absent, 1 to `max` otherwise.
///
/// # Errors
/// 400 naming `limit` when out of range or malformed.
pub fn limit(value: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    bounded("limit", value, default, 1..=max)
}

/// `s` percent-encoded for a path segment or query value (unreserved characters kept).
pub fn encode_component(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Marks a page as not the last: `Link: <url>; rel="next"` and `x-next-cursor: cursor`.
pub fn link_next(headers: &mut HeaderMap, url: &str, cursor: &str) {
    if let Ok(v) = HeaderValue::from_str(&format!("<{url}>; rel=\"next\"")) {
        headers.insert(header::LINK, v);
    }
    if let Ok(v) = HeaderValue::from_str(cursor) {
        headers.insert(HeaderName::from_static("x-next-cursor"), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_limits_are_checked() {
        assert_eq!(window(Some("5"), Some("9"), 0).unwrap(), (5, 9));
        assert_eq!(window(None, None, 7).unwrap(), (7, u64::MAX));
        let e = window(Some("x"), None, 0).unwrap_err().problem();
        assert_eq!(e.field.as_deref(), Some("from"));
        assert_eq!(window(Some("9"), Some("5"), 0).unwrap(), (9, 9));
        assert_eq!(limit(None, 100, 1000).unwrap(), 100);
        assert!(limit(Some("0"), 100, 1000).is_err() && limit(Some("1001"), 100, 1000).is_err());
        assert_eq!(encode_component("a b/é"), "a%20b%2F%C3%A9");
    }
}
