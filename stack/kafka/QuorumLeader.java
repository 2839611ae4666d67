// The KRaft quorum's active controller, for the cluster profile's fault tests: kafkajs has no DescribeQuorum,
// and a broker's metadata answer names a random broker as "controller" under KRaft. Run with the JDK's
// single-file launcher and Kafka's jars on the classpath; prints the leader's node id.
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class QuorumLeader {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, args[0]);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    try (Admin admin = Admin.create(props)) {
      System.out.println(admin.describeMetadataQuorum().quorumInfo().get().leaderId());
    }
  }
}
