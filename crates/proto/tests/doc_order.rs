//! docs/PROTOCOL.md opens with today's protocol; what each version added comes last.

use rangelock_proto::{MIN_VERSION, VERSION};

const DOC: &str = include_str!("../../../docs/PROTOCOL.md");

/// The title names today's version, the opening describes today's protocol (no version
/// history before §1), and the history is the last section, one entry per version.
#[test]
fn the_protocol_doc_opens_with_todays_protocol() {
    let title = DOC.lines().next().unwrap();
    assert_eq!(title, format!("# rangelock wire protocol, version {VERSION}"));
    let opening = &DOC[..DOC.find("\n## 1. ").expect("a §1")];
    for v in 2..=VERSION {
        for history in [format!("Version {v} adds"), format!("Version {v} added")] {
            assert!(
                !opening.contains(&history),
                "the opening tells history ({history}): {opening}"
            );
        }
    }
    assert!(
        opening.contains(&format!("version {MIN_VERSION} hellos")),
        "the opening does not say which older clients a server still accepts"
    );
    let last = &DOC[DOC.rfind("\n## ").unwrap() + 1..];
    assert!(
        last.starts_with("## ") && last.contains(". Version history\n"),
        "last section: {}",
        last.lines().next().unwrap()
    );
    for v in (MIN_VERSION..=VERSION).rev() {
        assert!(
            last.contains(&format!("Version {v} add")),
            "the history has no entry for version {v}"
        );
    }
}
