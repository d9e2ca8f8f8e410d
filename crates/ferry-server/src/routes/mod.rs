pub mod events;
pub mod published;
pub mod sandbox;
pub mod send_file;
pub mod spaces;
pub mod system;
pub mod threads;
pub mod uploads;
