package dev.refind.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.knn.plugin.KNNPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * One OpenSearch 2.19 node in this JVM, for refind's tests and benchmarks (scripts/opensearch-dev).
 *
 * <p>Built the way OpenSearch's own test framework builds one ({@code MockNode}): a {@link Node} subclass
 * that calls the protected constructor with plugins taken from the classpath instead of a plugins folder.
 * The plugins are Netty4 (the HTTP and transport layers), analysis-common (pattern_replace, cjk_width,
 * cjk_bigram, porter_stem and the other analyzers refind uses) and k-NN (the {@code knn_vector} field and
 * the {@code knn} query with a filter, refind's vectors; its Lucene engine, which needs no native library);
 * there is no security plugin.
 *
 * <p>Usage: {@code java -cp 'lib/*:classes' dev.refind.opensearch.DevNode HOME}. HOME holds
 * {@code config/opensearch.yml} and {@code config/log4j2.properties} (written by scripts/opensearch-dev);
 * logs go to stdout. SIGTERM (or SIGINT) closes the node before the JVM exits; with
 * {@code -Drefind.devnode.owner_pid=PID} it also exits when that process is gone.
 */
public final class DevNode extends Node {

    static final List<Class<? extends Plugin>> PLUGINS = List.of(Netty4Plugin.class, CommonAnalysisPlugin.class, KNNPlugin.class);

    DevNode(Environment environment) {
        super(environment, PLUGINS, true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: DevNode HOME   (HOME/config/opensearch.yml configures the node)");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        Path config = home.resolve("config");
        if (!Files.isRegularFile(config.resolve("opensearch.yml"))) {
            System.err.println("DevNode: " + config.resolve("opensearch.yml") + " not found");
            System.exit(2);
        }
        Settings input = Settings.builder().put(Environment.PATH_HOME_SETTING.getKey(), home.toString()).build();
        Environment environment =
            InternalSettingsPreparer.prepareEnvironment(input, Collections.emptyMap(), config, () -> "dev-node");
        LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(environment.settings()));
        LogConfigurator.configure(environment);

        DevNode node = new DevNode(environment);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                if (!node.awaitClose(20, TimeUnit.SECONDS)) {
                    System.err.println("DevNode: the node did not close within 20 s");
                }
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                closed.countDown();
            }
        }, "refind-devnode-shutdown"));
        try {
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            // the shutdown hook closes what start() opened
            System.exit(1);
        }
        System.out.println("DevNode: started " + Node.NODE_NAME_SETTING.get(environment.settings()));
        watchOwner();
        // OpenSearch's own threads are daemons (Bootstrap keeps a keep-alive thread); this one waits instead.
        closed.await();
    }

    /**
     * With {@code -Drefind.devnode.owner_pid=PID} (a test session), the node exits by itself once that process
     * is gone, so a test run that is killed outright leaves no node behind.
     */
    private static void watchOwner() {
        String owner = System.getProperty("refind.devnode.owner_pid");
        if (owner == null || owner.isEmpty()) {
            return;
        }
        long pid = Long.parseLong(owner);
        Thread watcher = new Thread(() -> {
            while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
            System.out.println("DevNode: owner process " + pid + " is gone; closing");
            System.exit(0);
        }, "refind-devnode-owner-watch");
        watcher.setDaemon(true);
        watcher.start();
    }
}
