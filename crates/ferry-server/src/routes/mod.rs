pub mod sandbox;
pub mod spaces;
pub mod system;
pub mod threads;
pub mod uploads;
