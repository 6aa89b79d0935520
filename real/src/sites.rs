//! Where a scenario's sections are written: the validated scenario keeps
//! the line of each `[[fault]]` but not of its workloads, `[chaos]`,
//! `[cluster]`, `[network]` or `[clocks]`, and a refusal must name the
//! file and line a person has to change. The headers are found in the
//! file's text (a validated file has each of them at most once, except the
//! workloads, which are counted in order).

/// The lines of one scenario file's section headers.
#[derive(Debug, Default)]
pub struct Sites {
    /// 1-based line of each `[[workload]]`, in file order.
    pub workloads: Vec<usize>,
    pub cluster: Option<usize>,
    pub network: Option<usize>,
    pub clocks: Option<usize>,
    pub chaos: Option<usize>,
    /// The `bugs = [...]` line.
    pub bugs: Option<usize>,
}

impl Sites {
    pub fn find(text: &str) -> Sites {
        let mut sites = Sites::default();
        let mut in_top_level = true;
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let trimmed = line.trim();
            if trimmed.starts_with('[') {
                in_top_level = false;
            }
            let header = trimmed.split('#').next().unwrap_or("").trim().replace(' ', "");
            match header.as_str() {
                "[[workload]]" => sites.workloads.push(line_no),
                "[cluster]" => sites.cluster = Some(line_no),
                "[network]" => sites.network = Some(line_no),
                "[chaos]" => sites.chaos = Some(line_no),
                h if h == "[clocks]" || h.starts_with("[clocks.") => {
                    sites.clocks.get_or_insert(line_no);
                }
                h if in_top_level && h.starts_with("bugs=") => sites.bugs = Some(line_no),
                _ => {}
            }
        }
        sites
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_found_by_line() {
        let text = "name = \"x\"\nbugs = [\"a\"]\n[cluster]\nservers = 3\n\n[[workload]]\nkind = \"kv\"\n[[ workload ]] # two\n[chaos]\n";
        let sites = Sites::find(text);
        assert_eq!(sites.workloads, vec![6, 8]);
        assert_eq!((sites.cluster, sites.chaos, sites.bugs, sites.network), (Some(3), Some(9), Some(2), None));
    }
}
