//! Checks the fuzz targets call: each takes any bytes and panics only when an invariant breaks.

use crate::blackbox::{self, decoder::Discard};

/// Decode any bytes as a Blackbox log: never panics, and the report accounts for every byte once.
pub fn blackbox_check(data: &[u8]) {
    let report = blackbox::decode("fuzz", data, |_, _| {}, &mut Discard);
    if let Err(e) = report.check_accounting() {
        panic!("byte accounting broken: {e}");
    }
}
