//! Placeholder: filled in by issue 7's link work.
