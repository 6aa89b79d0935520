//! "Did you mean …?" for misspelt keys, kinds, selectors and ids.
//!
//! Most bad scenario files are typos; naming the closest valid word turns an
//! error into a one-keystroke fix. Distance is optimal-string-alignment
//! (Levenshtein plus adjacent swaps), because swapped letters (`laetncy`) are
//! the commonest typo.

/// The candidate closest to `word`, if it is close enough to be a typo, or
/// else the only candidate that begins with it (`fencing` → `fencing-order`).
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let word_lower = word.to_ascii_lowercase().replace('_', "-");
    let limit = (word.chars().count() / 3).max(1);
    let candidates: Vec<&'c str> = candidates.into_iter().collect();
    let near = candidates
        .iter()
        .map(|candidate| (distance(&word_lower, &candidate.replace('_', "-")), *candidate))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, candidate)| candidate);
    near.or_else(|| {
        let mut extending = candidates.iter().filter(|c| word_lower.len() >= 3 && c.replace('_', "-").starts_with(&word_lower));
        match (extending.next(), extending.next()) {
            (Some(only), None) => Some(*only),
            _ => None,
        }
    })
}

/// `; did you mean `x`?` or nothing, ready to append to a message.
pub fn did_you_mean<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

/// Optimal string alignment distance between two strings, by characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the dynamic-programming table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapped_letters_count_once() {
        assert_eq!(distance("laetncy", "latency"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggests_only_close_words() {
        let keys = ["latency", "loss", "duplicate"];
        assert_eq!(closest("laetncy", keys), Some("latency"));
        assert_eq!(closest("los", keys), Some("loss"));
        assert_eq!(closest("bandwidth", keys), None);
        assert_eq!(closest("fencing", ["fencing-order", "fifo-order"]), Some("fencing-order"));
        assert_eq!(closest("lo", ["lock-a", "lock-b"]), None);
        assert_eq!(closest("random_server", ["random-server"]), Some("random-server"));
        assert_eq!(did_you_mean("dupliate", keys), "; did you mean `duplicate`?");
    }
}
