//! One module per subcommand: parse arguments, load inputs, call the library, print.

pub mod batch;
pub mod canon;
pub mod conformance;
pub mod cook;
pub mod demo;
pub mod device;
pub mod device_mode;
pub mod disclose;
pub mod docs;
pub mod keys;
pub mod log;
pub mod profiles;
pub mod rules;
pub mod schemas;
pub mod serve;
pub mod serve_config;
pub mod validate;
