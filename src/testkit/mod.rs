//! The project's test tooling, public so that the tests, the benchmarks and the fuzz targets
//! share it: generated flights in both formats ([`blackbox`], [`dataflash`]), damage models with
//! the truth about every change ([`damage`], also behind the `damage` command) and the checks the
//! fuzz targets make ([`fuzzing`]). Of the library only the `damage` command uses it.

pub mod blackbox;
pub mod damage;
pub mod dataflash;
pub mod fuzzing;
