//! The checker against a brute-force oracle: Wing & Gong's definition
//! enumerated directly (every real-time-respecting order of the operations,
//! each unknown outcome placed anywhere after its call or nowhere), with no
//! list, no memo and no pruning. On small random histories with random
//! answers, so both verdicts are common, the two must agree; and every
//! failing window must fail on its own.

use leasesim_history::history::{History, KvInput, KvOutput, Operation, RegisterHistory, RegisterInput, RegisterOutput};
use leasesim_history::model::kv::{compile, KvModel};
use leasesim_history::model::register::RegisterModel;
use leasesim_history::model::Model;
use leasesim_history::{check_kv, check_register, CheckOptions, Verdict};
use proptest::prelude::*;

/// An operation as the oracle sees it.
struct Op<'a, I, O> {
    call_ns: u64,
    /// `None`: unknown outcome (no return constraint, any answer, optional).
    known: Option<(u64, &'a O)>,
    input: &'a I,
}

/// Whether some order of `ops` explains every known answer.
fn oracle<M: Model>(model: &M, ops: &[Op<'_, M::Input, M::Output>]) -> bool {
    fn go<M: Model>(model: &M, ops: &[Op<'_, M::Input, M::Output>], done: &mut Vec<bool>, state: &M::State) -> bool {
        let pending_required = (0..ops.len()).filter(|&i| !done[i] && ops[i].known.is_some());
        if pending_required.clone().next().is_none() {
            return true;
        }
        for i in 0..ops.len() {
            if done[i] {
                continue;
            }
            // Real time: a required operation that returned before this one
            // was called must come first.
            let must_wait = (0..ops.len()).any(|j| !done[j] && j != i && ops[j].known.is_some_and(|(ret, _)| ret < ops[i].call_ns));
            if must_wait {
                continue;
            }
            let output = ops[i].known.map(|(_, o)| o);
            if let Some(next) = model.step(state, ops[i].input, output) {
                done[i] = true;
                let ok = go(model, ops, done, &next);
                done[i] = false;
                if ok {
                    return true;
                }
            }
        }
        false
    }
    go(model, ops, &mut vec![false; ops.len()], &model.init())
}

fn oracle_ops<'a, I, O, MI, MO>(history: &'a History<I, O>, compiled: impl Fn(usize) -> (&'a MI, Option<&'a MO>)) -> Vec<Op<'a, MI, MO>> {
    (0..history.ops.len())
        .map(|i| {
            let op = &history.ops[i];
            let (input, output) = compiled(i);
            Op { call_ns: op.call_ns, known: op.return_ns.zip(output), input }
        })
        .collect()
}

/// Operations over a short time span, so that many overlap and some touch.
fn timed<I: Clone + std::fmt::Debug, O: Clone + std::fmt::Debug>(
    io: impl Strategy<Value = (I, Option<O>)>,
) -> impl Strategy<Value = Operation<I, O>> {
    (io, 0u64..12, 0u64..5, 1u64..4).prop_map(|((input, output), call_ns, length_ns, client)| Operation {
        client,
        call_ns,
        return_ns: output.as_ref().map(|_| call_ns + length_ns),
        input,
        output,
    })
}

fn register_op() -> impl Strategy<Value = Operation<RegisterInput, RegisterOutput>> {
    let value = proptest::option::weighted(0.8, 0i64..3);
    let io = prop_oneof![
        value.clone().prop_map(|value| (RegisterInput::Read, Some(RegisterOutput::Read { value }))),
        (0i64..3, any::<bool>()).prop_map(|(value, known)| (RegisterInput::Write { value }, known.then_some(RegisterOutput::Write))),
        (value, 0i64..3, proptest::option::of(any::<bool>())).prop_map(|(expected, new, succeeded)| {
            (RegisterInput::Cas { expected, new }, succeeded.map(|succeeded| RegisterOutput::Cas { succeeded }))
        }),
    ];
    timed(io)
}

fn kv_op() -> impl Strategy<Value = Operation> {
    let key = (0..2u8).prop_map(|k| format!("k{k}"));
    let value = proptest::option::weighted(0.7, (0..2u8).prop_map(|v| format!("v{v}")));
    let lease = proptest::option::weighted(0.5, 1u64..3);
    let io = prop_oneof![
        (key.clone(), value.clone(), lease.clone(), any::<u8>()).prop_map(|(key, v, lease, pick)| {
            let out = match pick % 3 {
                0 => None,
                1 => Some(KvOutput::Ok),
                _ => Some(KvOutput::LeaseNotFound),
            };
            let out = if lease.is_none() && out == Some(KvOutput::LeaseNotFound) { Some(KvOutput::Ok) } else { out };
            (KvInput::Put { key, value: v.unwrap_or_else(|| "v0".into()), lease }, out)
        }),
        (key.clone(), value.clone()).prop_map(|(key, v)| (KvInput::Get { key }, Some(KvOutput::Value(v)))),
        (key.clone(), any::<bool>()).prop_map(|(key, known)| (KvInput::Delete { key }, known.then_some(KvOutput::Ok))),
        (key, value.clone(), value, proptest::option::of(any::<bool>())).prop_map(|(key, expected, v, succeeded)| {
            let input = KvInput::Cas { key, expected, value: v.unwrap_or_else(|| "v1".into()), lease: None };
            (input, succeeded.map(|succeeded| KvOutput::Cas { succeeded }))
        }),
        (1u64..3, any::<bool>())
            .prop_map(|(lease, known)| { (KvInput::LeaseGrant { lease: Some(lease) }, known.then_some(KvOutput::LeaseGranted { lease })) }),
        (1u64..3, proptest::option::of(any::<bool>())).prop_map(|(lease, revoked)| {
            let out = revoked.map(|r| if r { KvOutput::LeaseRevoked } else { KvOutput::LeaseNotFound });
            (KvInput::LeaseRevoke { lease }, out)
        }),
        (1u64..3).prop_map(|lease| (KvInput::LeaseExpire { lease }, Some(KvOutput::LeaseExpired))),
    ];
    timed(io)
}

fn check_register_against_oracle(history: &RegisterHistory) -> Result<(), TestCaseError> {
    let expected = oracle(&RegisterModel, &oracle_ops(history, |i| (&history.ops[i].input, history.ops[i].output.as_ref())));
    let report = check_register(history, &CheckOptions::default()).unwrap();
    prop_assert_eq!(report.verdict.name(), if expected { "linearizable" } else { "not-linearizable" }, "{:#?}", history);
    if let Verdict::NotLinearizable { window } = report.verdict {
        let alone = RegisterHistory { ops: window.iter().map(|&i| history.ops[i].clone()).collect() };
        let again = check_register(&alone, &CheckOptions::default()).unwrap();
        prop_assert_eq!(again.verdict.name(), "not-linearizable", "window {:?} of {:#?}", window, history);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn register_checker_agrees_with_brute_force(ops in prop::collection::vec(register_op(), 0..8)) {
        check_register_against_oracle(&RegisterHistory { ops })?;
    }

    #[test]
    fn kv_checker_agrees_with_brute_force(ops in prop::collection::vec(kv_op(), 0..8)) {
        let history = History { ops };
        let compiled = compile(&history.ops);
        let expected = oracle(&KvModel, &oracle_ops(&history, |i| (&compiled[i].0, compiled[i].1.as_ref())));
        let report = check_kv(&history, &CheckOptions::default()).unwrap();
        let expected = if expected { "linearizable" } else { "not-linearizable" };
        prop_assert_eq!(report.verdict.name(), expected, "{:#?}", history);
        if let Verdict::NotLinearizable { window } = report.verdict {
            let alone = History { ops: window.iter().map(|&i| history.ops[i].clone()).collect() };
            prop_assert_eq!(check_kv(&alone, &CheckOptions::default()).unwrap().verdict.name(), "not-linearizable");
        }
    }
}
