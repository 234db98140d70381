//! A bounded LRU of parsed files keyed by content hash: RL rollouts score many "after"
//! snapshots against the same "before", so its parse is done once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::detect::{self, Facts};
use crate::lang::Lang;
use crate::tree::{NodeLimit, Normaliser, Tree};
use crate::visit;

/// A file parsed, normalised and read by the detectors.
#[derive(Debug)]
pub struct ParsedFile {
    /// The normalised tree the distance is computed on.
    pub tree: Tree,
    /// What the detectors read from the file.
    pub facts: Facts,
    /// The syntax tree, kept so an edited copy of the file re-parses incrementally from it.
    pub syntax: tree_sitter::Tree,
}

impl ParsedFile {
    /// Reads `syntax`, the parse of `source`, into its normalised tree and its facts in one
    /// walk.
    ///
    /// # Errors
    /// The tree has more than `max_nodes` normalised nodes.
    pub fn read(
        lang: Lang,
        source: &str,
        syntax: tree_sitter::Tree,
        max_nodes: usize,
    ) -> Result<Self, NodeLimit> {
        let mut normaliser = Normaliser::new(lang, source, max_nodes);
        let mut facts = detect::Walk::new(lang, source);
        visit::walk(&syntax, (&mut normaliser, &mut facts));
        Ok(Self {
            tree: normaliser.finish()?,
            facts: facts.finish(),
            syntax,
        })
    }
}

type Key = [u8; 32];

/// Least-recently-used parsed files, bounded both in entries and in total tree nodes (the
/// nodes are what the memory is spent on).
#[derive(Debug)]
pub struct ParseCache {
    inner: Mutex<Entries>,
}

#[derive(Debug)]
struct Entries {
    map: HashMap<Key, (Arc<ParsedFile>, u64)>,
    tick: u64,
    nodes: usize,
    max_entries: usize,
    max_nodes: usize,
}

impl ParseCache {
    /// An empty cache of at most `max_entries` files and `max_nodes` tree nodes in total.
    pub fn new(max_entries: usize, max_nodes: usize) -> Self {
        Self {
            inner: Mutex::new(Entries {
                map: HashMap::new(),
                tick: 0,
                nodes: 0,
                max_entries,
                max_nodes,
            }),
        }
    }

    /// The key of `source` in `lang`; the path plays no part, so renamed files hit too.
    pub fn key(lang: Lang, source: &str) -> Key {
        let mut hash = Sha256::new();
        hash.update(lang.name());
        hash.update([0]);
        hash.update(source);
        hash.finalize().into()
    }

    /// The file cached under `key`, which becomes the most recently used.
    pub fn get(&self, key: &Key) -> Option<Arc<ParsedFile>> {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        entries.tick += 1;
        let tick = entries.tick;
        entries.map.get_mut(key).map(|(file, used)| {
            *used = tick;
            file.clone()
        })
    }

    /// Caches `file`, evicting the least recently used; a tree over `max_nodes` is not kept.
    pub fn insert(&self, key: Key, file: Arc<ParsedFile>) {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if file.tree.len() > entries.max_nodes || entries.max_entries == 0 {
            return;
        }
        entries.tick += 1;
        let tick = entries.tick;
        entries.nodes += file.tree.len();
        if let Some((old, _)) = entries.map.insert(key, (file, tick)) {
            entries.nodes -= old.tree.len();
        }
        // Eviction scans for the oldest entry: the cache holds at most a few hundred files,
        // and a scan is cheaper than keeping an ordered index up to date on every hit.
        while entries.map.len() > entries.max_entries || entries.nodes > entries.max_nodes {
            let Some(oldest) = entries
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            if let Some((gone, _)) = entries.map.remove(&oldest) {
                entries.nodes -= gone.tree.len();
            }
        }
    }

    /// Number of cached files.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }

    /// Whether no file is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bracket: &str) -> Arc<ParsedFile> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        Arc::new(ParsedFile {
            tree: Tree::from_bracket(bracket).unwrap(),
            facts: Facts::default(),
            syntax: crate::parse::parse(Lang::Python, "", deadline).unwrap(),
        })
    }

    #[test]
    fn evicts_the_least_recently_used_by_entries_and_by_nodes() {
        let cache = ParseCache::new(2, 100);
        let (a, b, c) = ([1; 32], [2; 32], [3; 32]);
        cache.insert(a, file("{a}"));
        cache.insert(b, file("{b}"));
        assert!(cache.get(&a).is_some());
        cache.insert(c, file("{c}"));
        assert!(cache.get(&b).is_none(), "b was the least recently used");
        assert!(cache.get(&a).is_some() && cache.get(&c).is_some());

        let small = ParseCache::new(10, 4);
        small.insert(a, file("{a{b}{c}}"));
        small.insert(b, file("{x{y}}"));
        assert_eq!(small.len(), 1, "5 nodes exceed the budget of 4");
        small.insert(c, file("{a{b}{c}{d}{e}}"));
        assert!(
            small.get(&c).is_none(),
            "a file larger than the whole budget is not kept"
        );
    }

    /// One walk for both readers gives what each gives alone, the node limit included.
    #[test]
    fn one_walk_reads_the_tree_and_the_facts_as_two_would() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let cases = [
            (
                Lang::Python,
                "import sys\n# note\ndef test_a():\n    assert f(1) == 2  # why\n\nif x is None:\n    sys.exit(1)\n",
            ),
            (
                Lang::JavaScript,
                "/* c */ describe('s', () => { it('t', () => { expect(1).toBe(1); }); });\ntry { f(); } catch (e) {}\n",
            ),
            (
                Lang::Rust,
                "/// doc\nfn main() { std::process::exit(0) }\n#[cfg(test)]\nmod tests { #[test] #[ignore] fn t() {} }\n",
            ),
        ];
        for (lang, source) in cases {
            let syntax = crate::parse::parse(lang, source, deadline).unwrap();
            let tree = Tree::from_syntax(lang, &syntax, source, 10_000).unwrap();
            let facts = detect::facts(lang, "", &syntax, source);
            let file = ParsedFile::read(lang, source, syntax.clone(), 10_000).unwrap();
            assert_eq!(file.tree, tree, "{lang:?}");
            assert_eq!(file.facts, facts, "{lang:?}");
            assert!(
                !facts.definitions.is_empty(),
                "{lang:?}: the case defines something"
            );
            assert_eq!(
                ParsedFile::read(lang, source, syntax, 5).err(),
                Some(NodeLimit { limit: 5 })
            );
        }
    }

    #[test]
    fn keys_depend_on_language_and_content() {
        assert_ne!(
            ParseCache::key(Lang::JavaScript, "x"),
            ParseCache::key(Lang::TypeScript, "x")
        );
        assert_ne!(
            ParseCache::key(Lang::Python, "x"),
            ParseCache::key(Lang::Python, "y")
        );
    }
}
