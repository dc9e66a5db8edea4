//! One module per subcommand: parse arguments, load the plan, call the library, print.
//! Exit codes come from [`crate::exit`].

pub(crate) mod context;
pub(crate) mod contract;
pub(crate) mod ledger;
pub(crate) mod migrate;
pub(crate) mod new;
pub(crate) mod outcomes;
pub(crate) mod resources;
pub(crate) mod resume;
pub(crate) mod scheduler;
pub(crate) mod skill;
pub(crate) mod status;
pub(crate) mod verify;
pub(crate) mod views;
