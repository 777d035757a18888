//! The inventory stage: one model of a cluster's hosts and their network
//! intent, loaded from a nodenet inventory, an install-config.yaml, an
//! agent-config.yaml or a bare NMState file, with every value located.

pub mod diag;
pub mod fields;
pub mod inventory;
pub mod load;
pub mod template;
pub mod yaml;

pub use diag::{Code, Diagnostic, Severity, SourceFile, SourceMap};
pub use inventory::*;
pub use load::{detect, load_files, load_texts, LoadError, Loaded};
pub use yaml::{Node, Span, Value};
