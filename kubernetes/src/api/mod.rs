//! The Kubernetes API calls of submit, kill, restart and scale, through the `kube` client:
//! each a blocking function that runs its requests on a private current-thread runtime.

use crate::{Kubernetes, KubernetesError, Manifests};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;

fn failed(uri: &str, e: impl std::fmt::Display) -> KubernetesError {
    KubernetesError::Api {
        uri: uri.to_string(),
        reason: e.to_string(),
    }
}

/// Runs `f` with a client of the cluster's API.
fn with_client<T>(
    k: &Kubernetes,
    f: impl AsyncFnOnce(Client, &str) -> Result<T, kube::Error>,
) -> Result<T, KubernetesError> {
    let uri = k.uri.as_deref().ok_or(KubernetesError::NoApi)?;
    let parsed: http::Uri = uri.parse().map_err(|e| failed(uri, e))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(uri, e))?;
    rt.block_on(async {
        let mut config = kube::Config::new(parsed);
        config.default_namespace = k.namespace.clone();
        let client = Client::try_from(config).map_err(|e| failed(uri, e))?;
        f(client, &k.namespace).await.map_err(|e| failed(uri, e))
    })
}

/// Creates the topology's objects (Secret, Service, then the StatefulSets).
pub fn create(k: &Kubernetes, m: &Manifests) -> Result<(), KubernetesError> {
    with_client(k, async |client, ns| {
        let pp = PostParams::default();
        if let Some(s) = &m.secret {
            Api::<Secret>::namespaced(client.clone(), ns)
                .create(&pp, s)
                .await?;
        }
        Api::<Service>::namespaced(client.clone(), ns)
            .create(&pp, &m.service)
            .await?;
        let sets = Api::<StatefulSet>::namespaced(client, ns);
        sets.create(&pp, &m.manager).await?;
        sets.create(&pp, &m.executors).await?;
        Ok(())
    })
}

/// Deletes the objects of topology object name `name` (those already gone are skipped).
pub fn delete(k: &Kubernetes, name: &str) -> Result<(), KubernetesError> {
    with_client(k, async |client, ns| {
        let dp = DeleteParams::default();
        let gone = |r: Result<(), kube::Error>| match r {
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            other => other,
        };
        let sets = Api::<StatefulSet>::namespaced(client.clone(), ns);
        for set in [format!("{name}-executors"), format!("{name}-manager")] {
            gone(sets.delete(&set, &dp).await.map(|_| ()))?;
        }
        gone(
            Api::<Service>::namespaced(client.clone(), ns)
                .delete(name, &dp)
                .await
                .map(|_| ()),
        )?;
        gone(
            Api::<Secret>::namespaced(client, ns)
                .delete(&format!("{name}-auth"), &dp)
                .await
                .map(|_| ()),
        )?;
        Ok(())
    })
}

/// Sets the executors' replicas (Heron's scale: a patch of the StatefulSet).
pub fn scale(k: &Kubernetes, name: &str, replicas: usize) -> Result<(), KubernetesError> {
    with_client(k, async |client, ns| {
        let patch = serde_json::json!({"spec": {"replicas": replicas}});
        Api::<StatefulSet>::namespaced(client, ns)
            .patch(
                &format!("{name}-executors"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        Ok(())
    })
}

/// The pod that runs container `shard`.
///
/// ```
/// assert_eq!(heron_kubernetes::api::pod_name("wordcount", 0), "wordcount-manager-0");
/// assert_eq!(heron_kubernetes::api::pod_name("wordcount", 2), "wordcount-executors-1");
/// ```
pub fn pod_name(name: &str, shard: i32) -> String {
    if shard == 0 {
        format!("{name}-manager-0")
    } else {
        format!("{name}-executors-{}", shard - 1)
    }
}

/// Restarts containers by deleting their pods (their StatefulSet starts them again).
pub fn restart(k: &Kubernetes, name: &str, shards: &[i32]) -> Result<(), KubernetesError> {
    with_client(k, async |client, ns| {
        let pods = Api::<Pod>::namespaced(client, ns);
        for &shard in shards {
            pods.delete(&pod_name(name, shard), &DeleteParams::default())
                .await?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
