//! The integration tests, in one binary so that a build links them once. Each module is one
//! concern; `cargo test --release --test suite quality -- --nocapture` runs one of them.

mod common;

mod architecture;
mod blackbox_csv;
mod clean_flights;
mod cli;
mod dataflash_cli;
mod dataflash_corpus;
mod dataflash_quality;
mod fuzz_corpus;
mod gps_home;
mod header_library;
mod html_report;
mod implausible_value;
mod independent_decoder;
mod info;
mod json_schema;
mod lost_fmt;
mod mcap_export;
mod misplaced_frame;
mod other_frames;
mod parallel;
mod parquet_export;
mod periodic;
mod pymavlink_oracle;
mod python_package;
mod quality;
mod readme;
mod real_corpus;
mod repeated_blocks;
mod robustness;
mod roundtrip;
mod salvage;
mod shipped_corpus;
mod start_marker;
mod suspect_group;
mod synth_layouts;
mod terminal;
mod text_mode;
