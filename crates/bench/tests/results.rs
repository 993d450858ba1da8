//! The committed report (`docs/results/`) is what its committed records render to:
//! `rangelock bench report --from docs/results` rewrites `report.md`, `report.html` and
//! every plot byte for byte. A change to the report's code that changes its output fails
//! here until the report is regenerated (`rangelock bench report --from docs/results`)
//! and committed with it.

use std::path::Path;

#[test]
fn the_committed_report_regenerates_from_its_records() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let records = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
        .count();
    assert!(records > 20, "docs/results holds {records} JSON files: the raw records are missing");
    rangelock_bench::seeds::regenerate_matches(&dir).unwrap();
}
