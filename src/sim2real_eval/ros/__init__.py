"""ROS 2 nodes (the only place importing rclpy / rosbag2_py): thin wrappers over ``sim2real_eval.node``.

``messages`` is rclpy-free (it fills any message object with ROS field names), so it is tested
without ROS; the node modules import rclpy at their top and run only inside a ROS 2 environment.
"""
