//! The name of a shared base model: what a run, an agent or a federation names under
//! `models/`.

use crate::FieldError;

/// Longest base model name.
pub const MAX_BASE_MODEL: usize = 200;

/// A shared base model's name: path segments of letters, digits and `._-` (no `..`), so it
/// always names something under `models/`.
///
/// # Errors
/// `field`, when `name` is not one.
pub fn check_base_model(field: &str, name: &str) -> Result<(), FieldError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_BASE_MODEL
        && name.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            "must be a model name under models/: segments of A-Z a-z 0-9 . _ - joined by /",
        ))
    }
}
