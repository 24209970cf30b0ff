//! Sweeps (`stackscope sweep`, the XTP study's `thrput` and `dela` grown
//! up): a grid of points (stack × protocol × family × socket buffer ×
//! offered load × message size), each run several times, summarised, and
//! written as CSV, JSON and a readable table.
//!
//! * [`axis`]: a flag's list or range into values;
//! * [`points`]: the grid into validated points;
//! * [`run`](mod@run), `target`, [`load`]: running them, under optional
//!   background CPU load;
//! * [`repeat`]: each point until the 95 % interval of its mean is within
//!   the target or a cap; [`busy`]: whether other work shared the machine;
//! * [`outcome`], [`stats`]: each point's figures;
//! * [`columns`], [`table`], [`text`]: the outputs.

pub mod axis;
pub mod busy;
pub mod columns;
pub mod load;
pub mod outcome;
mod point_run;
pub mod points;
pub mod repeat;
pub mod run;
pub mod stats;
pub mod table;
pub mod target;
pub mod text;

#[cfg(test)]
mod fixtures;

pub use outcome::PointResult;
pub use points::{Amount, Grid, Mode, Point, DELAY_EXCHANGES};
pub use repeat::{PointRun, Target, Verdict};
pub use run::{run, Event, Failure, Outcome, Progress, Settings};
pub use target::Targets;
