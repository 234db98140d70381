//! The tenant identity: taken from the authenticated caller, never from a request body.

use std::fmt;

/// A validated tenant id: 1 to 64 characters of `[A-Za-z0-9_.-]`.
///
/// The id is part of every storage key, so the character set excludes the key
/// separator `#` and anything a path or an object name would have to escape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(String);

/// Why a string is not a tenant id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TenantIdError {
    /// Empty, or longer than 64 characters.
    #[error("tenant id must be 1 to 64 characters long")]
    Length,
    /// A character outside `[A-Za-z0-9_.-]`, or dots alone.
    #[error("tenant id may only contain letters, digits, '_', '.' and '-', and not only dots")]
    Character,
}

impl TenantId {
    /// Validates `raw` as a tenant id.
    ///
    /// # Errors
    /// [`TenantIdError`] when the length or a character is out of range.
    pub fn parse(raw: &str) -> Result<Self, TenantIdError> {
        if raw.is_empty() || raw.len() > 64 {
            return Err(TenantIdError::Length);
        }
        if !raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            return Err(TenantIdError::Character);
        }
        // `.` and `..` are path segments wherever an id becomes part of a path or key.
        if raw.bytes().all(|b| b == b'.') {
            return Err(TenantIdError::Character);
        }
        Ok(Self(raw.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids_and_rejects_separators() {
        assert!(TenantId::parse("tenant-a_1.prod").is_ok());
        assert_eq!(TenantId::parse(""), Err(TenantIdError::Length));
        assert_eq!(TenantId::parse(&"a".repeat(65)), Err(TenantIdError::Length));
        assert_eq!(TenantId::parse("a#b"), Err(TenantIdError::Character));
        assert_eq!(TenantId::parse("a/b"), Err(TenantIdError::Character));
        assert_eq!(TenantId::parse(".."), Err(TenantIdError::Character));
        assert_eq!(TenantId::parse("."), Err(TenantIdError::Character));
        assert!(TenantId::parse("..a").is_ok());
    }
}
