use leasesim_core::testkit::*;
#[test]
fn scratch() {
    let s = Schedule::random(3173864375334526887);
    let (r, trace) = run_schedule_traced(&s);
    println!("{r:?}");
    for l in trace.lines() { if !l.contains("Append t") && !l.contains("AppendResp") { println!("{l}"); } }
}
