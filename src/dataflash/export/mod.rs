//! What a DataFlash log is exported as: CSV per message type ([`csv`]) and JSON Lines
//! ([`jsonl`]).

pub mod csv;
pub mod jsonl;
