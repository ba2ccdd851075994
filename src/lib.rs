//! `bbcheck`: diagnose, salvage and export damaged flight logs.
//!
//! The library decodes Blackbox logs ([`blackbox`]) into frames passed to a
//! [`blackbox::sink::Sink`] and a [`report::FileReport`] that accounts for every byte: accepted
//! frames, regions that are not damage (headers, padding, bytes after the log end) and corrupt
//! spans with their reasons.
//! ArduPilot DataFlash logs ([`dataflash`]) are read message by message into the same report.

pub mod blackbox;
pub mod cli;
pub mod columnar;
pub mod dataflash;
mod decimal;
pub mod periodic;
pub mod recording;
pub mod report;
pub mod testkit;
pub mod textmode;
