//! The shape of node/src as a graph of modules: it must have no cycle, and
//! no server module may reach into the tools.
//!
//! A cycle among modules means none of them can be read, tested or changed
//! alone (issue 29 found driver → transport → join → front → driver, and
//! serve ↔ etcd, serve ↔ ws through `NodeHandle`). The tools (`local`,
//! `load`, `nemesis`, `roster`) drive a cluster from outside: a member's
//! code that imported them would ship test tooling in the server.
//!
//! The graph's nodes are node/src's top-level modules (a directory such as
//! `etcd/` is one node: its files wire each other through `super::`), its
//! edges every `crate::X` path in code (comments and string literals
//! skipped; grouped `use crate::{a, b}` counted per member). `lib.rs`,
//! `main.rs` and `cli.rs` (the command line `main.rs` calls, which names
//! the server and every tool) are the roots, not modules of the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where a reference to another module was seen (for the failure message).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Site {
    file: String,
    line: usize,
}

/// module → (module it names → where first).
type Graph = BTreeMap<String, BTreeMap<String, Site>>;

#[test]
fn node_modules_form_no_cycle() {
    let graph = graph_of(&src_dir());
    assert!(graph.contains_key("driver") && graph.contains_key("etcd"), "the scan found node/src's modules: {:?}", graph.keys());
    if let Some(cycle) = find_cycle(&graph) {
        panic!("node/src has an import cycle: {}\n{}", cycle.join(" → "), explain(&graph, &cycle));
    }
}

#[test]
fn no_server_module_imports_the_tools() {
    let src = src_dir();
    let mut offenders = Vec::new();
    for file in rust_files(&src) {
        let relative = relative_name(&src, &file);
        if relative.starts_with("tools/") || module_of(&relative).is_none() {
            continue;
        }
        for (module, line) in crate_paths(&std::fs::read_to_string(&file).expect("read a source file")) {
            if module == "tools" {
                offenders.push(format!("node/src/{relative}:{line}"));
            }
        }
    }
    assert!(offenders.is_empty(), "server modules import crate::tools (the tools must stay outside the server): {}", offenders.join(", "));
}

#[test]
fn the_scanner_sees_paths_in_code_only() {
    let text = r##"
        use crate::driver::{Input, Probe};
        use crate::{front::Front, view};
        // crate::commented
        /* crate::blocked /* nested crate::deeper */ */
        let url = "http://x//crate::quoted"; let c = '"'; let t = crate::tls::Args;
        let raw = r#"crate::raw"#; fn f<'a>(x: &'a str) { crate::pb::x(); }
        pub(crate) fn g() {}
    "##;
    let found: Vec<(String, usize)> = crate_paths(text);
    let names: Vec<&str> = found.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names, ["driver", "front", "view", "tls", "pb"]);
    assert_eq!(found[0].1, 2, "line numbers count from 1");
    assert_eq!(found[3].1, 6, "code after a string holding // on the same line is still read");
}

#[test]
fn a_cycle_is_found_and_named() {
    let site = || Site { file: "x.rs".into(), line: 1 };
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b"), ("e", "a")] {
        graph.entry(from.into()).or_default().insert(to.into(), site());
        graph.entry(to.into()).or_default();
    }
    assert_eq!(find_cycle(&graph), Some(vec!["b".into(), "c".into(), "d".into(), "b".into()]));
    graph.get_mut("d").expect("d").clear();
    assert_eq!(find_cycle(&graph), None);
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read node/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn relative_name(src: &Path, file: &Path) -> String {
    file.strip_prefix(src).expect("under node/src").to_string_lossy().replace('\\', "/")
}

/// The top-level module a file belongs to (`None` for the crate roots).
fn module_of(relative: &str) -> Option<String> {
    let first = relative.split('/').next().expect("a path");
    match first {
        "lib.rs" | "main.rs" | "cli.rs" => None,
        _ => Some(first.trim_end_matches(".rs").to_string()),
    }
}

fn graph_of(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = relative_name(src, &file);
        let Some(module) = module_of(&relative) else { continue };
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let edges = graph.entry(module.clone()).or_default();
        for (target, line) in crate_paths(&text) {
            if target != module {
                edges.entry(target).or_insert(Site { file: format!("node/src/{relative}"), line });
            }
        }
    }
    // Modules only named (never naming another) are nodes too.
    let named: BTreeSet<String> = graph.values().flat_map(|e| e.keys().cloned()).collect();
    for module in named {
        graph.entry(module).or_default();
    }
    graph
}

/// The first cycle met by a depth-first walk in name order, as a path
/// that ends where it starts; `None` if the graph is acyclic.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = walk(graph, start, &mut path, &mut done) {
            return Some(cycle);
        }
    }
    None
}

fn walk(graph: &Graph, at: &str, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
    if let Some(from) = path.iter().position(|m| m == at) {
        let mut cycle = path[from..].to_vec();
        cycle.push(at.to_string());
        return Some(cycle);
    }
    if done.contains(at) {
        return None;
    }
    path.push(at.to_string());
    for next in graph.get(at).into_iter().flat_map(|e| e.keys()) {
        if let Some(cycle) = walk(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(at.to_string());
    None
}

/// One line per edge of `cycle`: where the reference is.
fn explain(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|pair| {
            let site = &graph[&pair[0]][&pair[1]];
            format!("  {} → {}: {}:{}", pair[0], pair[1], site.file, site.line)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module of every `crate::…` path in `text`'s code, with
/// its line, in order (a grouped `crate::{a::X, b}` gives `a` and `b`).
fn crate_paths(text: &str) -> Vec<(String, usize)> {
    let code = code_only(text);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::").map(|i| i + from) {
        from = at + "crate::".len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = code[from..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group).into_iter().map(|m| (m, line)));
        } else if let Some(name) = identifier(rest) {
            found.push((name, line));
        }
    }
    found
}

/// The first path segment of each member of a `{…}` group (its text after
/// the opening brace), at depth 1 only.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 1;
    let mut expect_head = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => break,
            '}' => depth -= 1,
            ',' if depth == 1 => expect_head = true,
            c if expect_head && depth == 1 && !c.is_whitespace() => {
                expect_head = false;
                heads.extend(identifier(&group[i..]));
            }
            _ => {}
        }
    }
    heads
}

fn identifier(text: &str) -> Option<String> {
    let name: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// `text` with comments and the insides of string and char literals
/// blanked (newlines kept, so line numbers stay right).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let skipped = skip_literal_or_comment(&chars, i);
        if skipped == i {
            out.push(chars[i]);
            i += 1;
        } else {
            out.extend(chars[i..skipped].iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
            i = skipped;
        }
    }
    out
}

/// Where the comment or literal starting at `i` ends (`i` if none starts).
fn skip_literal_or_comment(chars: &[char], i: usize) -> usize {
    let at = |k: usize| chars.get(k).copied();
    match (chars[i], at(i + 1)) {
        ('/', Some('/')) => (i..chars.len()).find(|k| chars[*k] == '\n').unwrap_or(chars.len()),
        ('/', Some('*')) => skip_block_comment(chars, i),
        ('"', _) => skip_string(chars, i + 1),
        ('r', Some('"' | '#')) if i == 0 || !is_ident(chars[i - 1]) => skip_raw_string(chars, i + 1),
        ('b', Some('"')) if i == 0 || !is_ident(chars[i - 1]) => skip_string(chars, i + 2),
        ('\'', Some('\\')) => (i + 3..chars.len()).find(|k| chars[*k] == '\'').map_or(chars.len(), |k| k + 1),
        ('\'', Some(_)) if at(i + 2) == Some('\'') => i + 3,
        _ => i,
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_block_comment(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut k = start;
    while k + 1 < chars.len() {
        match (chars[k], chars[k + 1]) {
            ('/', '*') => {
                depth += 1;
                k += 2;
            }
            ('*', '/') => {
                depth -= 1;
                k += 2;
                if depth == 0 {
                    return k;
                }
            }
            _ => k += 1,
        }
    }
    chars.len()
}

/// From just after the opening quote to just after the closing one.
fn skip_string(chars: &[char], mut k: usize) -> usize {
    while k < chars.len() {
        match chars[k] {
            '\\' => k += 2,
            '"' => return k + 1,
            _ => k += 1,
        }
    }
    chars.len()
}

/// From just after the `r` of `r#"…"#`.
fn skip_raw_string(chars: &[char], mut k: usize) -> usize {
    let hashes = chars[k..].iter().take_while(|c| **c == '#').count();
    k += hashes;
    if chars.get(k) != Some(&'"') {
        return k;
    }
    k += 1;
    while k < chars.len() {
        if chars[k] == '"' && chars[k + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return k + 1 + hashes;
        }
        k += 1;
    }
    chars.len()
}
