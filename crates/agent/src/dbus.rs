//! The few NetworkManager D-Bus calls nodenet makes itself, where a full
//! nmstate round (read everything, checkpoint, verify) costs seconds of a
//! slow node's time for nothing.

use crate::AgentError;

pub(crate) const NM: &str = "org.freedesktop.NetworkManager";

/// NetworkManager's manager and settings objects on the system bus.
pub(crate) struct Nm {
    pub bus: zbus::Connection,
    pub manager: zbus::Proxy<'static>,
    pub settings: zbus::Proxy<'static>,
}

impl Nm {
    pub async fn proxy(
        &self,
        path: String,
        iface: &'static str,
    ) -> Result<zbus::Proxy<'static>, AgentError> {
        zbus::Proxy::new(&self.bus, NM, path, iface)
            .await
            .map_err(dbus)
    }
}

pub(crate) fn dbus(e: zbus::Error) -> AgentError {
    AgentError::Nmstate(format!("D-Bus: {e}"))
}

/// Runs `work` against NetworkManager on a one-thread runtime.
pub(crate) fn with_nm<T>(
    work: impl AsyncFnOnce(&Nm) -> Result<T, AgentError>,
) -> Result<T, AgentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| AgentError::Nmstate(e.to_string()))?;
    rt.block_on(async {
        let bus = zbus::Connection::system().await.map_err(dbus)?;
        let manager = zbus::Proxy::new(&bus, NM, "/org/freedesktop/NetworkManager", NM)
            .await
            .map_err(dbus)?;
        let settings = zbus::Proxy::new(
            &bus,
            NM,
            "/org/freedesktop/NetworkManager/Settings",
            "org.freedesktop.NetworkManager.Settings",
        )
        .await
        .map_err(dbus)?;
        work(&Nm {
            bus,
            manager,
            settings,
        })
        .await
    })
}

/// Activates the profile at `path` on whatever device it names.
pub(crate) async fn activate(nm: &Nm, path: &zvariant::ObjectPath<'_>) -> Result<(), AgentError> {
    let root = zvariant::ObjectPath::try_from("/").expect("valid object path");
    let _active: zvariant::OwnedObjectPath = nm
        .manager
        .call("ActivateConnection", &(path, &root, &root))
        .await
        .map_err(dbus)?;
    Ok(())
}
