//! The synthetic flights imitate real firmware headers: every frame layout line of a generated
//! header is the line the firmware wrote in a real log of the corpus, and the settings decoding
//! needs are written in the firmware's form.

use crate::common;

use bbcheck::blackbox::header::Header;
use bbcheck::testkit::blackbox::{FlightSpec, Layout, flight};

/// The real log each layout imitates.
const REAL: [(Layout, &str); 3] = [
    (
        Layout::Betaflight3,
        "betaflight-3.1.5-pid-analyzer-example_smooth_tune.BBL",
    ),
    (
        Layout::Betaflight4,
        "betaflight-4.2.9-gimbal-ghost-btfl_002.bbl",
    ),
    (
        Layout::Inav,
        "inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT",
    ),
];

fn first_header(data: &[u8]) -> Header {
    bbcheck::blackbox::sessions(data)
        .into_iter()
        .next()
        .expect("a session")
        .header
}

#[test]
fn layouts_write_the_field_lines_of_the_real_firmware() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    for (layout, file) in REAL {
        let real = first_header(&std::fs::read(corpus.join("real/blackbox").join(file)).unwrap());
        let spec = FlightSpec {
            gps: true,
            ..FlightSpec::new(layout)
        };
        let synthetic = first_header(&flight(&spec));
        let mut compared = 0;
        for line in real.lines.iter().filter(|l| l.name.starts_with("Field ")) {
            assert_eq!(
                synthetic.get(&line.name),
                Some(line.value.as_str()),
                "{layout:?}: H {} differs from {file}",
                line.name
            );
            compared += 1;
        }
        // I names, signed, predictors and encodings, P predictors and encodings, and S at least.
        assert!(compared >= 10, "{layout:?}: {compared} lines compared");
        for name in [
            "Data version",
            "Firmware type",
            "I interval",
            "minthrottle",
            "vbatref",
            "motorOutput",
            "looptime",
        ] {
            assert!(synthetic.get(name).is_some(), "{layout:?}: no H {name}");
        }
        // The P interval in the firmware's form: a fraction, or an integer with a P ratio.
        let fraction = |h: &Header| h.get("P interval").unwrap().contains('/');
        assert_eq!(fraction(&synthetic), fraction(&real), "{layout:?}");
        assert_eq!(
            synthetic.get("P ratio").is_some(),
            real.get("P ratio").is_some(),
            "{layout:?}"
        );
        assert_eq!(synthetic.get("Firmware type"), real.get("Firmware type"));
        let product = |h: &Header| {
            let revision = h.firmware_revision.clone().unwrap();
            let mut words = revision.split(' ');
            let name = words.next().unwrap().to_owned();
            let major = words.next().unwrap().split('.').next().unwrap().to_owned();
            (name, major)
        };
        assert_eq!(product(&synthetic), product(&real), "{layout:?}");
        assert_eq!(synthetic.firmware, real.firmware, "{layout:?}");
    }
}

#[test]
fn gps_lines_are_written_only_with_gps() {
    for layout in Layout::ALL {
        let without = first_header(&flight(&FlightSpec {
            gps: false,
            iterations: 64,
            ..FlightSpec::new(layout)
        }));
        assert!(without.g.is_none() && without.h.is_none(), "{layout:?}");
        let with = first_header(&flight(&FlightSpec {
            gps: true,
            iterations: 64,
            ..FlightSpec::new(layout)
        }));
        assert!(with.g.is_some() && with.h.is_some(), "{layout:?}");
    }
}
