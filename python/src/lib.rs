//! `bbcheck._native`: the commands of `bbcheck` for Python, run with the interpreter released
//! (threads check and export files in parallel). `bbcheck/__init__.py` is the interface.

use bbcheck::cli::{Error as CommandError, calls};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::PathBuf;

create_exception!(
    bbcheck,
    Error,
    PyException,
    "A log could not be read, or the arguments are wrong (as `bbcheck` exits 2); `exit_code` is \
     1 for frame data whose header is lost."
);

/// The Python exception of a command's error: its message, as the command line says it, and
/// the exit code.
fn raised(py: Python<'_>, e: CommandError) -> PyErr {
    let error = Error::new_err(e.to_string());
    // Setting an attribute on a new exception object cannot fail but for lack of memory.
    let _ = error.value(py).setattr("exit_code", e.exit_code());
    error
}

/// The JSON report `bbcheck check --json --format FORMAT PATH` prints.
#[pyfunction]
fn check(py: Python<'_>, path: PathBuf, format: &str) -> PyResult<String> {
    py.detach(|| calls::check(&path, format))
        .map_err(|e| raised(py, e))
}

/// `bbcheck export ARGS…`; returns the exit code.
#[pyfunction]
fn export(py: Python<'_>, args: Vec<String>) -> PyResult<u8> {
    py.detach(|| calls::export(&args))
        .map_err(|e| raised(py, e))
}

/// `bbcheck salvage ARGS…`; returns the exit code and what it prints.
#[pyfunction]
fn salvage(py: Python<'_>, args: Vec<String>) -> PyResult<(u8, String)> {
    py.detach(|| calls::salvage(&args))
        .map_err(|e| raised(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    calls::silence();
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(export, m)?)?;
    m.add_function(wrap_pyfunction!(salvage, m)?)?;
    Ok(())
}
