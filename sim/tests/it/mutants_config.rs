//! `.cargo/mutants.toml` leaves out a few mutants by file, line and column
//! (operators inside code only a planted bug runs). Those pins go stale
//! silently when code above them moves: the exclusion then matches nothing,
//! and the mutant it meant comes back as a "survivor", or worse, it matches
//! some other operator that should be mutated. Each pin must still point at
//! the operator it names.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A line-pinned exclusion: `^core/src/x\.rs:LINE:COL: replace OP with `.
#[derive(Debug)]
struct Pin {
    pattern: String,
    file: String,
    line: usize,
    column: usize,
    operator: String,
}

/// Undoes the regex escapes the pins use (`\.`, `\+`, `\|`, …).
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

fn pins() -> Vec<Pin> {
    let text = std::fs::read_to_string(root().join(".cargo/mutants.toml")).expect("read .cargo/mutants.toml");
    let config: toml::Value = toml::from_str(&text).expect(".cargo/mutants.toml is TOML");
    let excludes = config.get("exclude_re").and_then(|v| v.as_array()).expect("exclude_re is a list");
    let mut out = Vec::new();
    for pattern in excludes.iter().filter_map(|v| v.as_str()) {
        let Some(rest) = pattern.strip_prefix('^') else { continue };
        let mut parts = rest.splitn(4, ':');
        let (Some(file), Some(line), Some(column), Some(what)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            panic!("a pinned exclusion is FILE:LINE:COL: replace OP with …, got {pattern:?}");
        };
        let what = unescape(what.trim_start());
        let operator = what
            .strip_prefix("replace ")
            .and_then(|w| w.split(" with").next())
            .unwrap_or_else(|| panic!("{pattern:?} does not say which operator it replaces"))
            .to_string();
        out.push(Pin {
            pattern: pattern.to_string(),
            file: unescape(file),
            line: line.parse().unwrap_or_else(|_| panic!("line of {pattern:?}")),
            column: column.parse().unwrap_or_else(|_| panic!("column of {pattern:?}")),
            operator,
        });
    }
    out
}

/// Where the pin points, or why it points nowhere.
fn pointed_at(pin: &Pin) -> Result<(), String> {
    let text = std::fs::read_to_string(root().join(&pin.file)).map_err(|e| format!("{}: {e}", pin.file))?;
    let line = text.lines().nth(pin.line - 1).ok_or_else(|| format!("{} has no line {}", pin.file, pin.line))?;
    // cargo-mutants counts columns in characters, from 1.
    let from: String = line.chars().skip(pin.column - 1).collect();
    if from.starts_with(&pin.operator) {
        Ok(())
    } else {
        Err(format!("{}:{}:{} is `{}`, not `{}`: re-pin it", pin.file, pin.line, pin.column, from.trim_end(), pin.operator))
    }
}

#[test]
fn every_line_pinned_exclusion_still_points_at_its_operator() {
    let pins = pins();
    assert!(pins.len() >= 3, "the pins were not read: {pins:?}");
    let stale: Vec<String> = pins.iter().filter_map(|p| pointed_at(p).err().map(|why| format!("{}\n  {why}", p.pattern))).collect();
    assert!(stale.is_empty(), "stale pins in .cargo/mutants.toml:\n{}", stale.join("\n"));
}

#[test]
fn a_pin_one_line_off_is_caught() {
    let mut pin = pins().into_iter().next().expect("a pin");
    pin.line += 1;
    assert!(pointed_at(&pin).is_err(), "{pin:?} still matched one line down");
}
