//! Every history format `check-history` reads, with known verdicts: the 50
//! Jepsen etcd logs as given, with their tabs turned into runs of spaces,
//! and rewritten as EDN (one register and keyed); small EDN histories
//! written by hand (one register, keyed registers, porcupine's key-value
//! maps, `:info`, `:time`); and the one rule for empty histories.

use std::path::{Path, PathBuf};

use leasesim::cli::check_history::{
    check_history, CheckHistoryArgs, HistoryFormat, EXIT_BAD_INPUT, EXIT_LINEARIZABLE, EXIT_NOT_LINEARIZABLE,
};
use leasesim_history::DEFAULT_SHRINK_BUDGET_STEPS;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../history/tests/data/jepsen-etcd-register")
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-history-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, text: &str) -> PathBuf {
    let path = temp_dir().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn args(file: PathBuf, format: Option<HistoryFormat>) -> CheckHistoryArgs {
    CheckHistoryArgs { file, format, json: true, budget: 20_000_000, shrink_budget: DEFAULT_SHRINK_BUDGET_STEPS }
}

/// The exit code `check-history` gives, format detected.
fn verdict(path: &Path) -> i32 {
    check_history(&args(path.to_path_buf(), None)).unwrap_or_else(|e| panic!("{e}"))
}

fn expected_verdicts() -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(data_dir().join("verdicts.txt")).unwrap();
    let rows: Vec<(String, i32)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (file, v) = l.split_once(char::is_whitespace).unwrap();
            let code = match v.trim() {
                "linearizable" => EXIT_LINEARIZABLE,
                "not-linearizable" => EXIT_NOT_LINEARIZABLE,
                other => panic!("verdicts.txt: {other}"),
            };
            (file.to_string(), code)
        })
        .collect();
    assert_eq!(rows.len(), 50);
    rows
}

/// Tabs become runs of one to four spaces, varying along the file.
fn spaced(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (i, c) in text.chars().enumerate() {
        if c == '\t' {
            out.push_str(&" ".repeat(1 + i % 4));
        } else {
            out.push(c);
        }
    }
    out
}

/// A Jepsen etcd log line as an EDN event; `key` wraps values in a
/// `[key value]` tuple; `time` adds `:time` (ns, from the line number).
fn edn_event(line: &str, index: usize, key: Option<u64>, process_offset: u64) -> Option<String> {
    let body = line.split(" - ").nth(1)?;
    let fields: Vec<&str> = body.split('\t').collect();
    let [process, kind, f, value] = fields.as_slice() else { panic!("{line}") };
    let value = match key {
        Some(k) if *process != ":nemesis" => format!("[{k} {value}]"),
        _ => value.to_string(),
    };
    let process = match process.trim().parse::<u64>() {
        Ok(p) => (p + process_offset).to_string(),
        Err(_) => process.trim().to_string(),
    };
    Some(format!("{{:process {process}, :type {kind}, :f {f}, :value {value}, :time {}}}", index * 1000 + 17))
}

fn as_edn(log: &str, key: Option<u64>) -> String {
    as_edn_from(log, key, 0)
}

fn as_edn_from(log: &str, key: Option<u64>, process_offset: u64) -> String {
    log.lines().enumerate().filter_map(|(i, l)| edn_event(l, i, key, process_offset)).map(|e| e + "\n").collect()
}

#[test]
fn jepsen_logs_as_given_and_with_spaces_get_their_known_verdicts() {
    let (mut agree, mut total) = (0, 0);
    let mut wrong = Vec::new();
    for (file, want) in expected_verdicts() {
        let original = data_dir().join(&file);
        let text = std::fs::read_to_string(&original).unwrap();
        assert!(text.contains('\t'), "{file} has tabs to replace");
        let with_spaces = write(&format!("spaces-{file}"), &spaced(&text));
        for path in [original, with_spaces] {
            total += 1;
            let got = verdict(&path);
            if got == want {
                agree += 1;
            } else {
                wrong.push(format!("{}: exit {got}, expected {want}", path.display()));
            }
        }
    }
    println!("verdicts agree {agree}/{total}");
    assert_eq!(total, 100);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn jepsen_logs_rewritten_as_edn_get_the_same_verdicts() {
    let mut wrong = Vec::new();
    for (file, want) in expected_verdicts() {
        let text = std::fs::read_to_string(data_dir().join(&file)).unwrap();
        for (shape, key) in [("single", None), ("keyed", Some(7))] {
            let path = write(&format!("{shape}-{file}.edn"), &as_edn(&text, key));
            let got = verdict(&path);
            if got != want {
                wrong.push(format!("{shape} {file}: exit {got}, expected {want}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn two_keys_are_checked_apart_and_the_bad_one_decides() {
    let verdicts = expected_verdicts();
    let good = &verdicts.iter().find(|(_, v)| *v == EXIT_LINEARIZABLE).unwrap().0;
    let bad = &verdicts.iter().find(|(_, v)| *v == EXIT_NOT_LINEARIZABLE).unwrap().0;
    let read = |f: &str| std::fs::read_to_string(data_dir().join(f)).unwrap();
    // Key 2's processes are renumbered so the two histories share none.
    let both_good = as_edn(&read(good), Some(1)) + &as_edn_from(&read(good), Some(2), 1000);
    assert_eq!(verdict(&write("two-good.edn", &both_good)), EXIT_LINEARIZABLE);
    let one_bad = as_edn(&read(good), Some(1)) + &as_edn_from(&read(bad), Some(2), 1000);
    assert_eq!(verdict(&write("one-bad.edn", &one_bad)), EXIT_NOT_LINEARIZABLE);
}

/// (file name, text, expected exit code): histories small enough to check
/// by hand.
const HAND_WRITTEN: &[(&str, &str, i32)] = &[
    // One register: write 1, then a read of nil after it completed: stale.
    (
        "stale-read.edn",
        "{:process 0, :type :invoke, :f :write, :value 1, :time 10}\n\
         {:process 0, :type :ok, :f :write, :value 1, :time 20}\n\
         {:process 1, :type :invoke, :f :read, :value nil, :time 30}\n\
         {:process 1, :type :ok, :f :read, :value nil, :time 40}\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // The same, but the write timed out (:info): it may not have happened.
    (
        "info-write.edn",
        "{:process 0, :type :invoke, :f :write, :value 1, :time 10}\n\
         {:process 0, :type :info, :f :write, :value 1, :time 20, :error :timeout}\n\
         {:process 1, :type :invoke, :f :read, :value nil, :time 30}\n\
         {:process 1, :type :ok, :f :read, :value nil, :time 40}\n",
        EXIT_LINEARIZABLE,
    ),
    // File order says the read came after the write; :time says they
    // overlapped, so the read may precede it.
    (
        "time-orders.edn",
        "{:process 0, :type :invoke, :f :write, :value 1, :time 10}\n\
         {:process 0, :type :ok, :f :write, :value 1, :time 50}\n\
         {:process 1, :type :invoke, :f :read, :value nil, :time 20}\n\
         {:process 1, :type :ok, :f :read, :value nil, :time 30}\n",
        EXIT_LINEARIZABLE,
    ),
    // Without :time, file order decides: the read began after the write ended.
    (
        "file-orders.edn",
        "{:process 0, :type :invoke, :f :write, :value 1}\n\
         {:process 0, :type :ok, :f :write, :value 1}\n\
         {:process 1, :type :invoke, :f :read, :value nil}\n\
         {:process 1, :type :ok, :f :read, :value nil}\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // cas [1 2] succeeded, then a read saw 1: impossible. As one vector,
    // with a nemesis event and a comment.
    (
        "cas-then-stale.edn",
        "; Jepsen writes one map a line; a vector of maps is read too\n\
         [{:process 0, :type :invoke, :f :write, :value 1}\n\
          {:process 0, :type :ok, :f :write, :value 1}\n\
          {:process :nemesis, :type :info, :f :start, :value {\"n1\" #{\"n2\"}}}\n\
          {:process 0, :type :invoke, :f :cas, :value [1 2]}\n\
          {:process 0, :type :ok, :f :cas, :value [1 2]}\n\
          {:process 1, :type :invoke, :f :read, :value nil}\n\
          {:process 1, :type :ok, :f :read, :value 1}]\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // A failed cas is an observation: the value was not 5.
    (
        "failed-cas.edn",
        "{:process 0, :type :invoke, :f :write, :value 5}\n\
         {:process 0, :type :ok, :f :write, :value 5}\n\
         {:process 1, :type :invoke, :f :cas, :value [5 6]}\n\
         {:process 1, :type :fail, :f :cas, :value [5 6]}\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // Keyed registers: each key on its own is fine.
    (
        "keyed-ok.edn",
        "{:process 0, :type :invoke, :f :write, :value [1 10]}\n\
         {:process 1, :type :invoke, :f :write, :value [2 20]}\n\
         {:process 0, :type :ok, :f :write, :value [1 10]}\n\
         {:process 1, :type :ok, :f :write, :value [2 20]}\n\
         {:process 0, :type :invoke, :f :read, :value [2 nil]}\n\
         {:process 0, :type :ok, :f :read, :value [2 20]}\n\
         {:process 1, :type :invoke, :f :cas, :value [1 [10 11]]}\n\
         {:process 1, :type :ok, :f :cas, :value [1 [10 11]]}\n",
        EXIT_LINEARIZABLE,
    ),
    // Keyed registers: key 2 read key 1's value.
    (
        "keyed-crossed.edn",
        "{:process 0, :type :invoke, :f :write, :value [1 10]}\n\
         {:process 0, :type :ok, :f :write, :value [1 10]}\n\
         {:process 1, :type :invoke, :f :read, :value [2 nil]}\n\
         {:process 1, :type :ok, :f :read, :value [2 10]}\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // porcupine's KV maps: a key never written reads "", appends concatenate.
    (
        "kv-ok.edn",
        "{:process 0, :type :invoke, :f :get, :key \"a\", :value nil}\n\
         {:process 0, :type :ok, :f :get, :key \"a\", :value \"\"}\n\
         {:process 1, :type :invoke, :f :put, :key \"a\", :value \"x\"}\n\
         {:process 1, :type :ok, :f :put, :key \"a\", :value \"x\"}\n\
         {:process 1, :type :invoke, :f :append, :key \"a\", :value \"y\"}\n\
         {:process 2, :type :invoke, :f :get, :key \"b\", :value nil}\n\
         {:process 1, :type :ok, :f :append, :key \"a\", :value \"y\"}\n\
         {:process 2, :type :ok, :f :get, :key \"b\", :value \"\"}\n\
         {:process 2, :type :invoke, :f :get, :key \"a\", :value nil}\n\
         {:process 2, :type :ok, :f :get, :key \"a\", :value \"xy\"}\n",
        EXIT_LINEARIZABLE,
    ),
    // porcupine's KV maps: the append was lost.
    (
        "kv-lost-append.edn",
        "{:process 1, :type :invoke, :f :put, :key \"a\", :value \"x\"}\n\
         {:process 1, :type :ok, :f :put, :key \"a\", :value \"x\"}\n\
         {:process 1, :type :invoke, :f :append, :key \"a\", :value \"y\"}\n\
         {:process 1, :type :ok, :f :append, :key \"a\", :value \"y\"}\n\
         {:process 2, :type :invoke, :f :get, :key \"a\", :value nil}\n\
         {:process 2, :type :ok, :f :get, :key \"a\", :value \"x\"}\n",
        EXIT_NOT_LINEARIZABLE,
    ),
    // Jepsen logs: a bare-event shape with spaces, and a stale read.
    ("bare.log", "0 :invoke :write 1\n0 :ok :write 1\n1 :invoke :read nil\n1 :ok :read 1\n", EXIT_LINEARIZABLE),
    (
        "bare-stale.log",
        "INFO  jepsen.core - Running test\n0 :invoke :write 1\n0 :ok :write 1\n1 :invoke :read nil\n1 :ok :read nil\n",
        EXIT_NOT_LINEARIZABLE,
    ),
];

#[test]
fn hand_written_histories_get_their_verdicts_detected_and_forced() {
    for (name, text, want) in HAND_WRITTEN {
        let path = write(name, text);
        assert_eq!(verdict(&path), *want, "{name} (detected)");
        let format = if name.ends_with(".edn") { HistoryFormat::Edn } else { HistoryFormat::Jepsen };
        let forced = check_history(&args(path, Some(format))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(forced, *want, "{name} (--format)");
    }
}

#[test]
fn edn_errors_name_line_and_column() {
    let cases: &[(&str, &str, &str)] = &[
        ("{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0 :type :ok :f :write :vlaue 1}\n", "2:33", "unknown event key"),
        ("{:process 0, :type :invoke, :f :append}\n", "1:1", "needs a `:value`"),
        ("{:process 0, :type :start, :f :read}\n", "1:20", "`:type` must be"),
        ("{:process 0, :type :invoke, :f :read, :value nil, :time 5}\n{:process 0, :type :ok, :f :read, :value 1}\n", "2:1", "no `:time`"),
        ("{:process 0, :type :invoke, :f :write, :value [1 2]}\n{:process 1, :type :invoke, :f :write, :value 3}\n", "2:1", "one shape"),
        ("{:process 0, :type :ok, :f :read, :value 1}\n", "1:1", "never invoked"),
        ("{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :ok, :f :write, :value 2}\n", "2:43", "differs"),
        ("{:process 0, :type :invoke, :f :write, :value [1\n", "1:47", "never closed"),
        ("[{:process 0, :type :invoke, :f :read, :value nil} 3]\n", "1:52", "expected an event map"),
    ];
    for (text, at, what) in cases {
        let path = write("bad.edn", text);
        let e = check_history(&args(path.clone(), Some(HistoryFormat::Edn))).expect_err(text).to_string();
        let want = format!("{}:{at}: ", path.display());
        assert!(e.starts_with(&want) && e.contains(what), "{text}\nwant {want}… {what}\ngot {e}");
    }
}

#[test]
fn a_history_without_operations_is_bad_input_in_every_format_with_or_without_format() {
    let cases: &[(&str, &str)] = &[
        ("empty.log", ""),
        ("blank.log", "\n  \n\n"),
        ("nemesis.log", "INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n"),
        ("core-only.log", "INFO  jepsen.core - Run complete, writing\n"),
        ("empty.edn", "[]\n"),
        ("comment.edn", "; nothing yet\n"),
        ("nemesis.edn", "{:process :nemesis, :type :info, :f :start, :value nil}\n"),
        ("empty.json", "{\"ops\": []}\n"),
    ];
    for (name, text) in cases {
        let path = write(name, text);
        let mut formats = vec![None, Some(HistoryFormat::Jepsen), Some(HistoryFormat::Edn)];
        if name.ends_with(".json") || text.trim().is_empty() {
            formats.push(Some(HistoryFormat::Leasesim));
        }
        for format in formats {
            let e = check_history(&args(path.clone(), format)).map_err(|e| e.to_string());
            let want = format!("{}:1:1: the file holds no client operation", path.display());
            // A format that cannot read the file at all says why instead.
            match (&e, format) {
                (Err(m), _) if m.starts_with(&want) => {}
                (Err(_), Some(f)) if !matches_format(name, text, f) => {}
                _ => panic!("{name} with {format:?}: {e:?}"),
            }
        }
    }
    let path = write("empty-again.log", "");
    assert_eq!(leasesim::cli::check_history::check_history_command(&args(path, None)), EXIT_BAD_INPUT);
}

/// Whether the file is a history of `format` (or empty of text).
fn matches_format(name: &str, text: &str, format: HistoryFormat) -> bool {
    text.trim().is_empty()
        || match format {
            HistoryFormat::Jepsen => name.ends_with(".log"),
            HistoryFormat::Edn => name.ends_with(".edn"),
            HistoryFormat::Leasesim => name.ends_with(".json"),
        }
}

#[test]
fn porcupine_kv_histories_get_porcupines_verdicts() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../history/tests/data/porcupine-kv");
    for (file, want) in [
        ("c01-ok.txt", EXIT_LINEARIZABLE),
        ("c01-bad.txt", EXIT_NOT_LINEARIZABLE),
        ("c10-ok.txt", EXIT_LINEARIZABLE),
        ("c10-bad.txt", EXIT_NOT_LINEARIZABLE),
        ("c50-ok.txt", EXIT_LINEARIZABLE),
        ("c50-bad.txt", EXIT_NOT_LINEARIZABLE),
    ] {
        assert_eq!(verdict(&dir.join(file)), want, "{file}");
    }
}
