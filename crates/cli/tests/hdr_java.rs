//! The interval log (`--hlog`) read by HdrHistogram's reference Java implementation:
//! its HistogramLogProcessor must find every interval and the same counts and
//! percentiles that stampede reports. Needs `java` and the HdrHistogram jar from Maven
//! Central (`STAMPEDE_HDRHISTOGRAM_JAR`); CI provides both.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The processor's per-interval CSV: (Int_Count, Total_Count, Total_50%, Total_90%,
/// Total_99%, Total_99.9%, Total_Max) for each line.
fn processed(jar: &str, log: &PathBuf, tag: &str) -> Vec<[u64; 7]> {
    let out = log.with_extension(tag);
    let run = Command::new("java")
        .args(["-cp", jar, "org.HdrHistogram.HistogramLogProcessor", "-csv"])
        .args(["-outputValueUnitRatio", "1", "-tag", tag, "-i"])
        .arg(log)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("java runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.trim_matches('"') == name)
            .unwrap_or_else(|| panic!("no {name} in {header:?}"))
    };
    let cols = [
        col("Int_Count"),
        col("Total_Count"),
        col("Total_50%"),
        col("Total_90%"),
        col("Total_99%"),
        col("Total_99.9%"),
        col("Total_Max"),
    ];
    lines
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            cols.map(|c| f[c] as u64)
        })
        .collect()
}

#[test]
fn the_reference_implementation_reads_the_interval_log() {
    let jar = match std::env::var("STAMPEDE_HDRHISTOGRAM_JAR") {
        Ok(j) => j,
        Err(_) => return crate::common::missing_peer("HdrHistogram's Java jar (STAMPEDE_HDRHISTOGRAM_JAR=PATH naming org.hdrhistogram:HdrHistogram:2.2.2 from Maven Central, with java on PATH)"),
    };
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-hlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (log, json) = (dir.join("run.hlog"), dir.join("run.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["load", &srv.url("/chat"), "--rate", "3000", "-d", "2500ms"])
        .args(["-c", "4", "-t", "2", "-q", "--hlog"])
        .arg(&log)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let intervals = r["intervals"].as_array().unwrap();
    for (tag, summary, per_second) in [
        ("corrected", &r["latency"], "histogram"),
        (
            "uncorrected",
            &r["latency_uncorrected"],
            "histogram_uncorrected",
        ),
    ] {
        let rows = processed(&jar, &log, tag);
        assert_eq!(rows.len(), intervals.len(), "{tag}: one line per second");
        for (row, iv) in rows.iter().zip(intervals) {
            let hist =
                stampede_engine::Hist::from_base64(iv[per_second].as_str().unwrap()).unwrap();
            assert_eq!(row[0], hist.0.len(), "{tag}: second {}", iv["t"]);
        }
        let last = rows.last().unwrap();
        let at = |p: f64| {
            summary["percentiles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["p"].as_f64() == Some(p))
                .unwrap()["us"]
                .as_u64()
                .unwrap()
        };
        let ours = [
            last[0],
            summary["count"].as_u64().unwrap(),
            at(50.0),
            at(90.0),
            at(99.0),
            at(99.9),
            summary["max_us"].as_u64().unwrap(),
        ];
        assert_eq!(last, &ours, "{tag}: Java's totals vs stampede's");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
