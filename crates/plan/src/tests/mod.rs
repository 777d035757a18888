//! The plan over whole inventories: the risk classes over a table of
//! changes (`risk_table`), and the plan against what render writes
//! (`plan_sees_render`).

mod plan_sees_render;
mod risk_table;
