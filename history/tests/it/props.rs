//! Property tests of the linearizability checker: histories made by running
//! random operations one after another against a reference store, then
//! widening each operation's interval around its instant, are always
//! linearizable (with any mix of unknown outcomes, applied or not); a read
//! of a value nobody wrote is never; and the failing window is a witness on
//! its own.

use crate::support::ReferenceKv;
use leasesim_history::history::{History, KvInput, KvOutput, Operation, RegisterHistory, RegisterInput, RegisterOutput};
use leasesim_history::{check_kv, check_register, CheckOptions, Verdict};
use proptest::prelude::*;

/// How an operation's outcome is recorded.
#[derive(Clone, Copy, Debug)]
enum Fate {
    /// Applied, and the client heard the answer.
    Known,
    /// Applied, but the client never heard back (perhaps gave up at a time).
    Unknown { gave_up: bool },
    /// Never applied, and the client never heard back.
    Lost,
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        6 => Just(Fate::Known),
        1 => any::<bool>().prop_map(|gave_up| Fate::Unknown { gave_up }),
        1 => Just(Fate::Lost),
    ]
}

/// Spacing of the instants at which the sequential run applies operations;
/// jitter up to three spacings makes neighbours overlap.
const SPACING_NS: u64 = 100;

/// One generated operation: what, who, its fate, and how far its call and
/// return stretch from its instant.
#[derive(Clone, Debug)]
struct Spec<I> {
    input: I,
    client: u64,
    fate: Fate,
    before_ns: u64,
    after_ns: u64,
}

fn spec<I: std::fmt::Debug + Clone>(input: impl Strategy<Value = I>) -> impl Strategy<Value = Spec<I>> {
    (input, 1u64..6, fate(), 0..3 * SPACING_NS, 0..3 * SPACING_NS).prop_map(|(input, client, fate, before_ns, after_ns)| Spec {
        input,
        client,
        fate,
        before_ns,
        after_ns,
    })
}

/// Runs `specs` in order at instants `SPACING_NS` apart and records the
/// history; `apply` is the reference object.
fn record<I: Clone, O>(specs: &[Spec<I>], mut apply: impl FnMut(&I) -> O) -> History<I, O> {
    let ops = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let at_ns = 1_000 + i as u64 * SPACING_NS;
            let call_ns = at_ns - s.before_ns;
            let return_ns = at_ns + s.after_ns;
            let (return_ns, output) = match s.fate {
                Fate::Known => (Some(return_ns), Some(apply(&s.input))),
                Fate::Unknown { gave_up } => {
                    apply(&s.input);
                    (gave_up.then_some(return_ns), None)
                }
                Fate::Lost => (None, None),
            };
            Operation { client: s.client, call_ns, return_ns, input: s.input.clone(), output }
        })
        .collect();
    History { ops }
}

fn register_input() -> impl Strategy<Value = RegisterInput> {
    prop_oneof![
        Just(RegisterInput::Read),
        (0i64..4).prop_map(|value| RegisterInput::Write { value }),
        (proptest::option::of(0i64..4), 0i64..4).prop_map(|(expected, new)| RegisterInput::Cas { expected, new }),
    ]
}

/// The recorded history, and the register's value at the end of the run.
fn register_history(specs: &[Spec<RegisterInput>]) -> (RegisterHistory, Option<i64>) {
    let mut value: Option<i64> = None;
    let history = record(specs, |input| match input {
        RegisterInput::Read => RegisterOutput::Read { value },
        RegisterInput::Write { value: v } => {
            value = Some(*v);
            RegisterOutput::Write
        }
        RegisterInput::Cas { expected, new } => {
            let succeeded = *expected == value;
            if succeeded {
                value = Some(*new);
            }
            RegisterOutput::Cas { succeeded }
        }
    });
    (history, value)
}

fn kv_input() -> impl Strategy<Value = KvInput> {
    let key = (0..3u8).prop_map(|k| format!("k{k}"));
    let value = (0..3u8).prop_map(|v| format!("v{v}"));
    let lease = proptest::option::weighted(0.4, 1u64..4);
    prop_oneof![
        4 => (key.clone(), value.clone(), lease.clone())
            .prop_map(|(key, value, lease)| KvInput::Put { key, value, lease }),
        4 => key.clone().prop_map(|key| KvInput::Get { key }),
        1 => key.clone().prop_map(|key| KvInput::Delete { key }),
        3 => (key, proptest::option::of(value.clone()), value, lease)
            .prop_map(|(key, expected, value, lease)| KvInput::Cas { key, expected, value, lease }),
        2 => proptest::option::weighted(0.8, 1u64..4).prop_map(|lease| KvInput::LeaseGrant { lease }),
        1 => (1u64..4).prop_map(|lease| KvInput::LeaseRevoke { lease }),
        1 => (1u64..4).prop_map(|lease| KvInput::LeaseExpire { lease }),
    ]
}

fn kv_history(specs: &[Spec<KvInput>]) -> History {
    let mut store = ReferenceKv::default();
    record(specs, |input| store.apply(input))
}

fn options() -> CheckOptions {
    CheckOptions::default()
}

/// The window's operations, alone, must not be linearizable either.
fn assert_window_fails_alone_register(history: &RegisterHistory, window: &[usize]) {
    let alone = RegisterHistory { ops: window.iter().map(|&i| history.ops[i].clone()).collect() };
    let report = check_register(&alone, &options()).unwrap();
    assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "window alone: {:?}", report.verdict);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn sequential_register_runs_are_linearizable(specs in prop::collection::vec(spec(register_input()), 0..40)) {
        let (history, _) = register_history(&specs);
        let report = check_register(&history, &options()).unwrap();
        prop_assert_eq!(report.verdict, Verdict::Linearizable, "{:#?}", history);
    }

    #[test]
    fn sequential_kv_runs_are_linearizable(specs in prop::collection::vec(spec(kv_input()), 0..48)) {
        let history = kv_history(&specs);
        let report = check_kv(&history, &options()).unwrap();
        prop_assert_eq!(report.verdict, Verdict::Linearizable, "{:#?}", history);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_not_linearizable(
        specs in prop::collection::vec(spec(register_input()), 0..30),
        at in 0usize..31,
        stretch_ns in 0..3 * SPACING_NS,
    ) {
        let (mut history, _) = register_history(&specs);
        let at_ns = 1_000 + at as u64 * SPACING_NS;
        let bogus = history.ops.len();
        history.ops.push(Operation {
            client: 99,
            call_ns: at_ns.saturating_sub(stretch_ns),
            return_ns: Some(at_ns + stretch_ns),
            input: RegisterInput::Read,
            output: Some(RegisterOutput::Read { value: Some(77) }),
        });
        let report = check_register(&history, &options()).unwrap();
        let Verdict::NotLinearizable { window } = report.verdict else {
            return Err(TestCaseError::fail(format!("expected not linearizable: {history:#?}")));
        };
        prop_assert!(window.contains(&bogus), "the bogus read is in the window: {:?}", window);
        if report.window_minimal {
            prop_assert_eq!(&window, &vec![bogus], "the bogus read alone is the 1-minimal window");
        }
        assert_window_fails_alone_register(&history, &window);
    }

    #[test]
    fn a_kv_get_of_a_value_never_written_is_not_linearizable(
        specs in prop::collection::vec(spec(kv_input()), 0..32),
        at in 0usize..33,
        key in 0..3u8,
    ) {
        let mut history = kv_history(&specs);
        let at_ns = 1_000 + at as u64 * SPACING_NS;
        history.ops.push(Operation {
            client: 99,
            call_ns: at_ns,
            return_ns: Some(at_ns + 1),
            input: KvInput::Get { key: format!("k{key}") },
            output: Some(KvOutput::Value(Some("never-written".into()))),
        });
        let bogus = history.ops.len() - 1;
        let report = check_kv(&history, &options()).unwrap();
        let Verdict::NotLinearizable { window } = report.verdict else {
            return Err(TestCaseError::fail(format!("expected not linearizable: {history:#?}")));
        };
        // A shrink probe may run out of steps (the window is then flagged
        // not minimal); otherwise the bogus get alone is the window.
        prop_assert!(window.contains(&bogus), "{:?}", window);
        if report.window_minimal {
            prop_assert_eq!(window, vec![bogus]);
        }
    }

    /// An unknown write is the only source of a value: a read of it after
    /// the write's call is linearizable (it took effect), a read that
    /// returned before the write was called is not.
    #[test]
    fn unknown_outcomes_may_or_may_not_take_effect(
        specs in prop::collection::vec(spec(register_input()), 0..24),
        gap_ns in 1u64..500,
        gave_up in any::<bool>(),
    ) {
        let (mut history, final_value) = register_history(&specs);
        let end_ns = 1_000 + specs.len() as u64 * SPACING_NS + 4 * SPACING_NS;
        let write = Operation {
            client: 98,
            call_ns: end_ns,
            return_ns: gave_up.then_some(end_ns + 1),
            input: RegisterInput::Write { value: 55 },
            output: None,
        };
        let read_at_ns = end_ns + gap_ns;
        let read = |call_ns: u64, value: Option<i64>| Operation {
            client: 99,
            call_ns,
            return_ns: Some(call_ns + 1),
            input: RegisterInput::Read,
            output: Some(RegisterOutput::Read { value }),
        };
        let mut after = history.clone();
        after.ops.push(write.clone());
        after.ops.push(read(read_at_ns, Some(55)));
        let report = check_register(&after, &options()).unwrap();
        prop_assert_eq!(report.verdict, Verdict::Linearizable);

        // The unknown write may also not have happened (yet): a later read
        // of the value the run ended with stays linearizable.
        let mut never = history.clone();
        never.ops.push(write.clone());
        never.ops.push(read(read_at_ns, final_value));
        let report = check_register(&never, &options()).unwrap();
        prop_assert_eq!(report.verdict, Verdict::Linearizable);

        history.ops.push(write);
        history.ops.push(read(end_ns.saturating_sub(gap_ns + 2), Some(55)));
        let report = check_register(&history, &options()).unwrap();
        prop_assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "{:?}", report.verdict);
    }

    #[test]
    fn checking_is_deterministic(specs in prop::collection::vec(spec(kv_input()), 0..32)) {
        let history = kv_history(&specs);
        let first = check_kv(&history, &options()).unwrap();
        let second = check_kv(&history, &options()).unwrap();
        prop_assert_eq!(first, second);
    }
}
