//! The languages scored on their syntax trees, and how a path or a name maps to one.

use serde::{Deserialize, Serialize};

/// A language with a tree-sitter grammar. Files in any other language get line metrics only.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// TypeScript: `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// TypeScript with JSX: `.tsx`.
    Tsx,
    /// JavaScript, JSX included: `.js`, `.mjs`, `.cjs`, `.jsx`.
    JavaScript,
    /// Python: `.py`, `.pyi`.
    Python,
    /// Rust: `.rs`.
    Rust,
    /// Go: `.go`.
    Go,
    /// Java: `.java`.
    Java,
}

impl Lang {
    /// Every supported language.
    pub const ALL: [Lang; 7] = [
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Python,
        Lang::Rust,
        Lang::Go,
        Lang::Java,
    ];

    /// The language of a file, from its extension.
    pub fn from_path(path: &str) -> Option<Lang> {
        let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, ext) = file.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "py" | "pyi" => Lang::Python,
            "rs" => Lang::Rust,
            "go" => Lang::Go,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// What a name [`Lang::from_name`] refuses is told.
    pub const NAMES: &'static str =
        "must be one of typescript, tsx, javascript, python, rust, go, java";

    /// The language named by `--lang` (a name or an extension).
    pub fn from_name(name: &str) -> Option<Lang> {
        Some(match name.to_ascii_lowercase().as_str() {
            "typescript" | "ts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "javascript" | "js" | "jsx" => Lang::JavaScript,
            "python" | "py" => Lang::Python,
            "rust" | "rs" => Lang::Rust,
            "go" | "golang" => Lang::Go,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// The lowercase name, as serialised (`typescript`, `tsx`, …).
    pub fn name(self) -> &'static str {
        match self {
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Python => "python",
            Lang::Rust => "rust",
            Lang::Go => "go",
            Lang::Java => "java",
        }
    }

    /// The bundled tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }

    /// Node kinds dropped from the normalised tree: comments carry no behaviour, and dropping
    /// them keeps a reworded comment from counting as an edit.
    pub fn is_comment(self, kind: &str) -> bool {
        match self {
            Lang::Rust | Lang::Java => matches!(kind, "line_comment" | "block_comment"),
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript | Lang::Python | Lang::Go => {
                kind == "comment"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_map_to_languages() {
        assert_eq!(Lang::from_path("src/a/b.tsx"), Some(Lang::Tsx));
        assert_eq!(Lang::from_path("lib/x.MJS"), Some(Lang::JavaScript));
        assert_eq!(Lang::from_path("pkg/mod.py"), Some(Lang::Python));
        assert_eq!(Lang::from_path("Makefile"), None);
        assert_eq!(Lang::from_path("notes.md"), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::from_name(lang.name()), Some(lang));
        }
    }
}
