//! The threaded runner: a thread per host on the real clock (DESIGN.md,
//! "Runners"). Placeholder module filled below.
