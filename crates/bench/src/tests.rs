use std::path::Path;

use crate::corpus::DocSet;
use crate::harness::Config;
use crate::{docgen, sig};

#[test]
fn smoke_one_tiny_iteration() {
    let dir = std::env::temp_dir().join(format!("cw-bench-smoke-{}", std::process::id()));
    docgen::write_set(&dir, 2, 1, 1).unwrap();
    let set = DocSet::load("smoke", Path::new(&dir)).unwrap();
    assert_eq!(set.docs.len(), 2);
    assert_eq!(set.hash_lines().unwrap().len(), 2);
    let records = set.measure_all(Config::SMOKE).unwrap();
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r["docs_per_s"].as_f64().is_some_and(|x| x > 0.0)));

    let doc = &set.docs[0].value;
    let records = sig::measure_all("smoke", doc, Config::SMOKE).unwrap();
    assert!(records.len() >= 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
