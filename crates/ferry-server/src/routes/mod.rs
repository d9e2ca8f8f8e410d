pub mod spaces;
pub mod system;
