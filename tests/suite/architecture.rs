//! The layering `docs/architecture.md` draws: each top-level module imports only from the layers
//! below it, the two formats not from each other, and no two files of `src/` import each other,
//! directly or through others. Read from the sources' `crate::` and `super::` paths outside their
//! unit tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layer of each top-level module, lowest first.
const LAYERS: [(&str, u8); 11] = [
    ("decimal", 0),
    ("columnar", 0),
    ("recording", 0),
    ("textmode", 0),
    ("periodic", 0),
    ("report", 1),
    ("blackbox", 2),
    ("dataflash", 2),
    ("testkit", 3),
    ("cli", 4),
    ("main", 5),
];

/// Every module of `src/` (`blackbox::frame`, `cli`, …; `lib` is the crate root) with its source.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
                let rel = path.strip_prefix(&src).unwrap().with_extension("");
                let mut name = rel.to_string_lossy().replace('/', "::");
                if let Some(parent) = name.strip_suffix("::mod") {
                    name = parent.to_string();
                }
                out.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// The code of a source file without its unit tests and comments.
fn code(source: &str) -> String {
    let end = source
        .find("#[cfg(test)]\nmod tests")
        .unwrap_or(source.len());
    source[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a file names from `crate::` or `super::`: plain paths, and `use` lists expanded
/// (`use super::{a::B, c}` names `super::a::B` and `super::c`).
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let starts_path = (rest.starts_with("crate::") || rest.starts_with("super::"))
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if !starts_path {
            i += 1;
            continue;
        }
        let len = path_len(rest);
        expand(&rest[..len], &mut out);
        i += len.max(1);
    }
    out
}

/// The length of the path (with any brace lists) at the start of `s`.
fn path_len(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            c if depth > 0 || c.is_alphanumeric() || c == '_' || c == ':' => {}
            _ => return i,
        }
    }
    s.len()
}

/// `a::{b, c::{d}}` as `a::b`, `a::c::d`.
fn expand(path: &str, out: &mut Vec<String>) {
    let Some(open) = path.find('{') else {
        out.push(path.trim_end_matches(':').to_string());
        return;
    };
    let prefix = &path[..open];
    let inner = &path[open + 1..path.rfind('}').unwrap_or(path.len())];
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = inner[start..i].split(" as ").next().unwrap().trim();
                if item == "self" {
                    out.push(prefix.trim_end_matches(':').to_string());
                } else if !item.is_empty() {
                    let item: String = item.chars().filter(|c| !c.is_whitespace()).collect();
                    expand(&format!("{prefix}{item}"), out);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
}

/// The module a path from module `from` leads into: the longest prefix that is a module.
fn target(from: &str, path: &str, modules: &BTreeMap<String, String>) -> Option<String> {
    let mut parts: Vec<&str> = path.split("::").collect();
    let mut base: Vec<&str> = if from == "lib" {
        Vec::new()
    } else {
        from.split("::").collect()
    };
    match parts[0] {
        "crate" => {
            parts.remove(0);
            base.clear();
        }
        _ => {
            while parts.first() == Some(&"super") {
                parts.remove(0);
                base.pop();
            }
        }
    }
    base.extend(parts);
    (1..=base.len())
        .rev()
        .map(|n| base[..n].join("::"))
        .find(|m| modules.contains_key(m))
}

/// Module → the modules it imports (not its own ancestors, which hold only its declaration).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    modules
        .iter()
        .map(|(name, source)| {
            let targets = paths(&code(source))
                .iter()
                .filter_map(|p| target(name, p, &modules))
                .filter(|t| t != name && !name.starts_with(&format!("{t}::")))
                .collect();
            (name.clone(), targets)
        })
        .collect()
}

fn layer(module: &str) -> u8 {
    let top = module.split("::").next().unwrap();
    LAYERS
        .iter()
        .find(|(name, _)| *name == top)
        .unwrap_or_else(|| panic!("{module} is in no layer of docs/architecture.md"))
        .1
}

#[test]
fn each_layer_imports_only_from_the_layers_below_it() {
    let mut upward = Vec::new();
    for (from, targets) in imports() {
        if from == "lib" {
            continue;
        }
        let top = from.split("::").next().unwrap();
        for to in targets {
            let same_top = to.split("::").next() == Some(top);
            if !same_top && layer(&to) >= layer(&from) {
                upward.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports across or up the layers: {upward:#?}"
    );
}

#[test]
fn no_two_files_import_each_other_even_through_others() {
    let graph = imports();
    // Every module reachable from each; a module reaching itself is on a circle.
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(m) = stack.pop() {
            if seen.insert(m.clone()) {
                stack.extend(graph.get(m).into_iter().flatten());
            }
        }
        if seen.contains(start) {
            circles.push(start.clone());
        }
    }
    assert!(
        circles.is_empty(),
        "modules on an import circle: {circles:?}"
    );
}

#[test]
fn the_reading_of_imports_sees_use_lists_and_relative_paths() {
    let mut found = paths("use super::{a::B, c::{self, D}};\nlet x = crate::report::seconds(1);");
    found.sort();
    assert_eq!(
        found,
        [
            "crate::report::seconds",
            "super::a::B",
            "super::c",
            "super::c::D"
        ]
    );
    let graph = imports();
    assert!(graph["blackbox::header"].contains("blackbox::predictor"));
    assert!(graph["cli::damage"].contains("testkit::damage"));
}
