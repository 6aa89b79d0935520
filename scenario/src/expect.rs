//! The `[expect]` table: what a sweep of this scenario must find.
//!
//! A `violation` verdict has to name the invariants it expects, and those
//! names must be real ids: an expectation that no checker can ever meet
//! would make a sweep fail (or pass) for the wrong reason.

use std::collections::BTreeSet;

use super::error::Diags;
use super::fields::{TableReader, Val};
use super::invariants::{all_ids, is_known_invariant};
use super::model::{Expect, Verdict};
use super::suggest;

const KEYS: [&str; 2] = ["verdict", "violations"];

/// Reads `[expect]`; an absent section expects `safe`.
pub(crate) fn expect(t: Option<TableReader<'_>>, d: &mut Diags) -> Option<Expect> {
    let Some(mut t) = t else {
        return Some(Expect { verdict: Verdict::Safe });
    };
    let mut verdict_val = None;
    let verdict = t.require("verdict", "\"safe\"", d, |v, d| {
        verdict_val = Some(v.clone());
        verdict(v, d)
    });
    let violations = t.take("violations");
    let ids = violations.as_ref().map(|v| ids(v, d));
    t.finish(d, &KEYS);
    match (verdict?, ids) {
        ("safe", None) => Some(Expect { verdict: Verdict::Safe }),
        ("safe", Some(_)) => {
            if let Some(v) = violations {
                d.error(
                    v.key_span.clone(),
                    "`violations` is only for verdict = \"violation\"",
                    "remove `violations`, or set `verdict = \"violation\"`",
                );
            }
            None
        }
        (_, Some(ids)) => Some(Expect { verdict: Verdict::Violation { ids: ids? } }),
        (_, None) => {
            if let Some(v) = verdict_val {
                v.error(
                    d,
                    "verdict = \"violation\" needs `violations = [..]`",
                    "list the invariant ids some seed must fire, e.g. `violations = [\"lock-belief-overlap\"]`",
                );
            }
            None
        }
    }
}

fn verdict<'a>(v: &Val<'a>, d: &mut Diags) -> Option<&'a str> {
    let text = v.string(d, "\"safe\"")?;
    if text == "safe" || text == "violation" {
        return Some(text);
    }
    let message = format!("unknown verdict `{text}`{}", suggest::did_you_mean(text, ["safe", "violation"]));
    v.error(d, message, "use \"safe\" (no invariant may fire) or \"violation\" (with `violations = [..]`)");
    None
}

fn ids(v: &Val<'_>, d: &mut Diags) -> Option<Vec<String>> {
    let items = v.strings(d, "[\"lock-belief-overlap\"]")?;
    if items.is_empty() {
        v.error(d, "`violations` is empty", "list at least one invariant id, e.g. `violations = [\"lock-belief-overlap\"]`");
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut ok = true;
    for (id, element) in &items {
        if !is_known_invariant(id) {
            let message = format!("unknown invariant id `{id}`{}", suggest::did_you_mean(id, all_ids()));
            element.error(d, message, format!("invariant ids: {}", all_ids().collect::<Vec<_>>().join(", ")));
            ok = false;
        } else if !seen.insert(*id) {
            element.error(d, format!("`{id}` is listed twice in `violations`"), "list each invariant id once");
            ok = false;
        }
    }
    ok.then(|| items.iter().map(|(id, _)| id.to_string()).collect())
}
