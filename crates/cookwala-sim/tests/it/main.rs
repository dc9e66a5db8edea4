#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod faults;
mod hostile;
mod lifecycle;
mod limits;

use canonical_json::Value;
use cookwala_sim::{SimConfig, SimEvent, Simulation, builtin};

/// A config for built-in recipe `id` on its device.
pub fn config(id: &str) -> SimConfig {
    let example = builtin::example(id).unwrap();
    let mut c =
        SimConfig::new(builtin::recipe(id).unwrap(), builtin::device(example.device).unwrap());
    c.human_present = example.human_present;
    c
}

/// Runs until final (or `limit_ms` of simulated time), collecting every event.
pub fn run(sim: &mut Simulation, limit_ms: u64) -> Vec<SimEvent> {
    let mut events = Vec::new();
    while !sim.is_final() && sim.now_ms() < limit_ms {
        events.extend(sim.advance(1_000));
    }
    events
}

/// Walks every string in a document.
pub fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out);
        }),
        _ => {}
    }
}
