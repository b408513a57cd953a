package dedup.hbase.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import scala.Tuple2;

/**
 * The Hadoop configuration a task opens files with: Hadoop's defaults and site files, and the
 * application's {@code spark.hadoop.*} settings (S3 credentials and endpoints, a viewfs mount
 * table ...), as Spark's own readers see them. A task's JVM knows the application's settings
 * ({@link SparkEnv}); a bare {@code new Configuration()} would miss them. Settings made at run
 * time in a session ({@code spark.conf.set}) are not the application's and are not here.
 */
final class ExecutorHadoop {
  private ExecutorHadoop() {
  }

  static Configuration conf() {
    Configuration conf = new Configuration();
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      for (Tuple2<String, String> setting : env.conf().getAllWithPrefix("spark.hadoop.")) {
        conf.set(setting._1(), setting._2());
      }
    }
    return conf;
  }
}
