//! What `/org/seqgpt/Summarizer1` shows when introspected.
//!
//! zbus's built-in `Introspect` describes an object together with its whole subtree, so the
//! service object would list every job object of every caller. Here the service object
//! describes its own interfaces and a `jobs` child, nothing below. (On the system bus the
//! policy file also keeps callers other than root from introspecting the nodes above the
//! jobs, `/` to `/org/seqgpt`, and the `jobs` node itself; job paths are random besides.)

use super::summarizer::{Summarizer, SERVICE_PATH};
use zbus::object_server::Interface;
use zbus::{interface, Connection, ObjectServer};

/// The standard interfaces every object has (as zbus describes them).
const STANDARD: &str = r#"  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping">
    </method>
    <method name="GetMachineId">
      <arg type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect">
      <arg type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg type="v" direction="out"/>
    </method>
    <method name="Set">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="in"/>
    </method>
    <method name="GetAll">
      <arg name="interface_name" type="s" direction="in"/>
      <arg type="a{sv}" direction="out"/>
    </method>
    <signal name="PropertiesChanged">
      <arg name="interface_name" type="s"/>
      <arg name="changed_properties" type="a{sv}"/>
      <arg name="invalidated_properties" type="as"/>
    </signal>
  </interface>
"#;

/// `org.freedesktop.DBus.Introspectable` of the service object.
pub struct ServiceIntrospection;

#[interface(name = "org.freedesktop.DBus.Introspectable")]
impl ServiceIntrospection {
    async fn introspect(&self, #[zbus(object_server)] server: &ObjectServer) -> zbus::fdo::Result<String> {
        let summarizer = server.interface::<_, Summarizer>(SERVICE_PATH).await.map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        let mut xml = String::from(
            "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n \
             \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n",
        );
        summarizer.get().await.introspect_to_writer(&mut xml, 2);
        xml.push_str(STANDARD);
        xml.push_str("  <node name=\"jobs\"/>\n</node>\n");
        Ok(xml)
    }
}

/// Replaces the service object's built-in Introspectable (call before owning the name).
pub async fn install(conn: &Connection) -> zbus::Result<()> {
    let server = conn.object_server();
    server
        .remove_named(SERVICE_PATH, zbus::names::InterfaceName::from_static_str_unchecked("org.freedesktop.DBus.Introspectable"))
        .await?;
    server.at(SERVICE_PATH, ServiceIntrospection).await?;
    Ok(())
}
