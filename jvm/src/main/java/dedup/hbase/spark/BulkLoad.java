package dedup.hbase.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.tool.BulkLoadHFiles;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The driver side: region boundaries of a table, and BulkLoadHFiles of a folder of HFiles.
 * Both talk to HBase through ZooKeeper ({@code quorum}: host[,host...]; {@code port}).
 */
public final class BulkLoad {
  private BulkLoad() {
  }

  static Configuration conf(String quorum, int port, String znodeParent) {
    Configuration conf = HBaseConfiguration.create();
    conf.set(HConstants.ZOOKEEPER_QUORUM, quorum);
    conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, port);
    if (znodeParent != null && !znodeParent.isEmpty()) {
      conf.set(HConstants.ZOOKEEPER_ZNODE_PARENT, znodeParent);
    }
    return conf;
  }

  /**
   * The start keys of each table's regions but the first (empty) one, hex, comma-joined; one
   * line per table of {@code tables} (names, one per line).
   */
  public static String splitKeys(String quorum, int port, String znodeParent, String tables)
      throws Exception {
    List<String> lines = new ArrayList<>();
    try (Connection connection = ConnectionFactory.createConnection(conf(quorum, port, znodeParent))) {
      for (String table : tables.split("\n")) {
        try (RegionLocator locator = connection.getRegionLocator(TableName.valueOf(table))) {
          List<String> out = new ArrayList<>();
          for (byte[] start : locator.getStartKeys()) {
            if (start.length > 0) {
              out.add(Bytes.toHex(start));
            }
          }
          lines.add(String.join(",", out));
        }
      }
    }
    return String.join("\n", lines);
  }

  /**
   * Hand every HFile under {@code dir/<family>/} to the table's region servers. A file that
   * straddles a region boundary (the table was split or merged since the files were cut) is
   * not split: the load fails ("... fits into no region. And because
   * hbase.loadincremental.fail.if.need.split.hfile was set to true ...") and a rerun cuts the
   * files at the regions of then. HBASE-30501: a retried bulk load whose files had been split
   * lost data (fixed in 2.6.8 and 2.5.17; this helper runs with 2.6.4, the newest
   * hbase-shaded-mapreduce -hadoop3 build on Maven Central here). {@code copy}: copy the files
   * into HBase and leave them (else they are moved when HBase shares their file system).
   * Returns the number of files loaded.
   */
  public static int load(String quorum, int port, String znodeParent, String table, String dir,
      boolean copy) throws Exception {
    Configuration conf = conf(quorum, port, znodeParent);
    conf.setBoolean(BulkLoadHFiles.ALWAYS_COPY_FILES, copy);
    // one load may bring a file per Spark partition to a region: do not refuse many files
    conf.setInt(BulkLoadHFiles.MAX_FILES_PER_REGION_PER_FAMILY, Integer.MAX_VALUE);
    conf.setBoolean("hbase.loadincremental.fail.if.need.split.hfile", true); // HBASE-27305, in 2.6
    Map<BulkLoadHFiles.LoadQueueItem, java.nio.ByteBuffer> loaded =
        BulkLoadHFiles.create(conf).bulkLoad(TableName.valueOf(table), new Path(dir));
    return loaded.size();
  }
}
