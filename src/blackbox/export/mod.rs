//! What a decoded Blackbox log is exported as: the reference decoder's CSV files ([`csv`]),
//! JSON Lines ([`jsonl`]), Parquet tables ([`parquet`]) and MCAP recordings ([`mcap`]). Each is a [`super::sink::Sink`] fed in file order.

pub mod csv;
pub mod jsonl;
pub mod mcap;
pub mod parquet;
