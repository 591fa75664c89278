//! SLURM files applied by `Live` (RFC 8416 §4: filters, then
//! assertions) must not depend on the order of the files.

use ipfib_rpki::{Live, RouteOrigin, Rov, Slurm};

fn slurm(json: &str) -> Slurm {
    Slurm::parse(json.as_bytes(), "x.slurm").expect("SLURM")
}

#[test]
fn one_files_filter_does_not_remove_anothers_assertion() {
    let dir = std::env::temp_dir().join(format!("ipfib-review-slurm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let vrps = dir.join("vrps.csv");
    std::fs::write(&vrps, "AS1,10.0.0.0/8,8\n").unwrap();
    // File A: an operator's own assertion for 10.1.0.0/16.
    let a = r#"{"slurmVersion":1,"locallyAddedAssertions":{"prefixAssertions":[{"asn":64510,"prefix":"10.1.0.0/16"}]}}"#;
    // File B: drops what the RPKI says about 10.0.0.0/8.
    let b = r#"{"slurmVersion":1,"validationOutputFilters":{"prefixFilters":[{"prefix":"10.0.0.0/8"}]}}"#;
    let route = "10.1.0.0/16".parse().unwrap();
    let mut got = Vec::new();
    for files in [vec![slurm(a), slurm(b)], vec![slurm(b), slurm(a)]] {
        let live = Live::new(files);
        live.add_file(vrps.clone()).unwrap();
        got.push(live.load().vrps.validate(&route, RouteOrigin::As(64510)));
    }
    std::fs::remove_dir_all(&dir).ok();
    // Filters apply to the validators' output, assertions are added after
    // every filter: the asserted route is valid whatever the file order.
    assert_eq!(got, [Rov::Valid, Rov::Valid], "[A, B] then [B, A]");
}
