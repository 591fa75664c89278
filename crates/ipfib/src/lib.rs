pub mod addr;
pub mod oracle;
pub mod prefix;
pub mod route_table;
pub mod values;
