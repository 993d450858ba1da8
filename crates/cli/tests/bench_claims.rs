//! `rangelock bench claims [--json]`: every claim of the registry, with the fields
//! docs/BENCH.md documents.

use std::process::Command;

fn claims(json: bool) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rangelock"));
    c.args(["bench", "claims"]);
    if json {
        c.arg("--json");
    }
    let out = c.output().expect("rangelock runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The JSON is an array with one object per claim, each with the documented fields, and
/// BENCH.md names every field the JSON has (so a renamed field fails here).
#[test]
fn claims_json_has_every_claim_with_the_documented_fields() {
    let json: serde_json::Value = serde_json::from_str(&claims(true)).expect("JSON");
    let entries = json.as_array().expect("an array");
    assert_eq!(entries.len(), rangelock_bench::seeds::claims::claims().len());
    let bench_md =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/BENCH.md"))
            .expect("docs/BENCH.md");
    let fields: Vec<&String> = entries[0].as_object().expect("objects").keys().collect();
    for field in ["seed", "figure", "quote", "seed_ratio", "our_band", "rule"] {
        assert!(fields.iter().any(|f| *f == field), "{field} missing: {fields:?}");
    }
    for field in &fields {
        assert!(bench_md.contains(&format!("`{field}`")), "BENCH.md does not name `{field}`");
    }
    // Table 5's first ratio is the seed's 2.74 / 3.52, taken from its quote.
    let t5 = entries
        .iter()
        .find(|e| e["figure"] == "Table 5" && e["gist"] == "a read's p50 below an RPC's")
        .expect("Table 5's read");
    let ratio = t5["seed_ratio"].as_f64().expect("a number");
    assert!((ratio - 2.74 / 3.52).abs() < 1e-9, "{ratio}");
    assert!(t5["quote"].as_str().unwrap().contains("| RDMA read | 2.74 | 2.86 |"));
    // A claim the seed states no number for has a null seed_ratio and our band.
    let none = entries.iter().find(|e| e["seed_ratio"].is_null() && e["judged"] == true).unwrap();
    assert!(none["our_band"]["reason"].as_str().unwrap().starts_with("ours"), "{none}");
}

/// The text listing shows each figure once and every claim's quote.
#[test]
fn claims_text_lists_every_quote() {
    let text = claims(false);
    for c in rangelock_bench::seeds::claims::claims() {
        let quote = rangelock_bench::seeds::quote::normalise(c.quote);
        assert!(text.contains(&quote), "missing: {quote}");
    }
    assert_eq!(text.matches("\nConcurrent Range Locking Fig. 5.2 ").count(), 1, "{text}");
}
