use leasesim_core::testkit::*;
#[test]
fn scratch() {
    let mut s = Schedule::random(12635629056368414316);
    println!("{s:?}");
    let (r, trace) = run_schedule_traced(&s);
    println!("{r:?}");
    let lines: Vec<&str> = trace.lines().collect();
    for l in &lines[lines.len().saturating_sub(60)..] { println!("{l}"); }
    s.faults.clear();
}
