//! What a path says about a file: whether it is a test or test configuration, and the module
//! name other files would use to import it.

use crate::lang::Lang;

/// JS-family extensions whose `*.test.*` files are tests.
const JS_EXTENSIONS: &[&str] = &["js", "ts", "tsx", "jsx", "mjs", "cjs", "mts", "cts"];

/// Files named like this are where execution starts; nothing imports them.
const ENTRY_FILES: &[&str] = &["main", "lib", "build", "setup", "manage", "__main__"];

fn components(path: &str) -> (Vec<&str>, &str) {
    let mut parts: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let file = parts.pop().unwrap_or_default();
    (parts, file)
}

/// Whether a path holds tests or test configuration: anything under `tests/`, `test/` (so
/// `src/test/`) or `__tests__/`; `test_*.py`, `*_test.py`, `conftest.py`,
/// `*.test.{js,ts,tsx,jsx,mjs,…}`, `*.spec.*`, `*_test.go`, `*Test.java`, `*Tests.java`; and
/// the configuration of a test runner ([`is_test_setup`]). `setup.cfg` is not one: it mostly
/// configures packaging.
pub fn is_test_path(path: &str) -> bool {
    let (dirs, file) = components(path);
    let in_test_dir = dirs
        .iter()
        .any(|d| matches!(*d, "tests" | "test" | "__tests__"));
    let js_test = file
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| stem.ends_with(".test") && JS_EXTENSIONS.contains(&ext));
    in_test_dir
        || js_test
        || (file.starts_with("test_") && file.ends_with(".py"))
        || file.ends_with("_test.py")
        || file.contains(".spec.")
        || file.ends_with("_test.go")
        || file.ends_with("Test.java")
        || file.ends_with("Tests.java")
        || is_test_setup(path)
}

/// Configuration that changes how tests are collected or run; even a new one is a flag.
pub(crate) fn is_test_setup(path: &str) -> bool {
    let (_, file) = components(path);
    matches!(file, "conftest.py" | "pytest.ini" | "tox.ini")
        || ["jest.config.", "vitest.config.", ".mocharc", "karma.conf."]
            .iter()
            .any(|p| file.starts_with(p))
}

/// The name other files mention to use this one: the file name without extensions, or the
/// directory's for `index.*`, `mod.rs` and `__init__.py` (and for any Go file, since Go
/// imports packages, which are directories). `None` for entry points, which nothing imports,
/// and declaration files, which compilers load unasked.
pub(crate) fn module_stem(path: &str) -> Option<&str> {
    let (dirs, file) = components(path);
    if file.ends_with(".d.ts") {
        return None;
    }
    let stem = file.split('.').next().unwrap_or(file);
    let by_directory =
        matches!(stem, "index" | "mod" | "__init__") || Lang::from_path(path) == Some(Lang::Go);
    let stem = if by_directory { *dirs.last()? } else { stem };
    (!stem.is_empty() && !ENTRY_FILES.contains(&stem)).then_some(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths() {
        for path in [
            "tests/test_api.py",
            "pkg/tests/helpers.py",
            "src/test/java/com/x/FooTest.java",
            "src/__tests__/a.ts",
            "test_api.py",
            "api_test.py",
            "conftest.py",
            "src/a.test.tsx",
            "src/a.spec.js",
            "web/a.test.mjs",
            "pkg/a_test.go",
            "src/main/java/FooTests.java",
            "tests/cli.rs",
            "pytest.ini",
            "tox.ini",
            "jest.config.ts",
            "vitest.config.mjs",
            ".mocharc.yml",
            "karma.conf.js",
            "C:\\repo\\tests\\x.py",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "src/api.py",
            "setup.cfg",
            "src/testing.py",
            "src/contest.py",
            "src/latest.ts",
            "README.md",
            "",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
    }

    #[test]
    fn test_setup_files() {
        assert!(is_test_setup("a/conftest.py"));
        assert!(is_test_setup("jest.config.js"));
        assert!(!is_test_setup("tests/test_a.py"));
    }

    #[test]
    fn module_stems() {
        assert_eq!(module_stem("src/utils/strings.py"), Some("strings"));
        assert_eq!(module_stem("src/utils/__init__.py"), Some("utils"));
        assert_eq!(module_stem("src/widgets/index.tsx"), Some("widgets"));
        assert_eq!(module_stem("src/net/mod.rs"), Some("net"));
        assert_eq!(module_stem("pkg/cache/lru.go"), Some("cache"));
        assert_eq!(module_stem("src/Foo.java"), Some("Foo"));
        assert_eq!(module_stem("src/main.rs"), None);
        assert_eq!(module_stem("index.ts"), None);
        assert_eq!(module_stem("types/api.d.ts"), None);
    }
}
