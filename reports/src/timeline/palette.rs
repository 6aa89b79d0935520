//! One colour per client, the same in every row (holder, belief, store
//! write), so a reader follows a client across the chart by colour. Red is
//! kept out: it means a violation.

const CLIENTS: [&str; 10] = ["#3182ce", "#d53f8c", "#2f855a", "#c05621", "#6b46c1", "#2c7a7b", "#975a16", "#4a5568", "#b83280", "#2b6cb0"];

pub fn client(id: u64) -> &'static str {
    CLIENTS[(id.max(1) - 1) as usize % CLIENTS.len()]
}
